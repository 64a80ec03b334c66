/** The storage ports' contract against `MemoryStore` (no DynamoDB, no Java; the DynamoDB twin: test/contract/). */
import { MemoryStore } from '../../functions/adapters/memory/store';
import { describeStoreContract } from '../contract/store-contract';

describeStoreContract('MemoryStore', {
  async fixture() {
    const memory = new MemoryStore();
    return {
      store: memory,
      endpoints: memory,
      putService: async (service) => memory.putService(service),
      putTemplate: async (serviceSid, template) => memory.putTemplate(serviceSid, template),
      putApiKey: async (record) => memory.putApiKey(record),
      putWebhookEndpoint: async (endpoint) => memory.putWebhookEndpoint(endpoint),
      balance: async (serviceSid) => memory.getService(serviceSid)?.balance,
      charges: async (serviceSid) =>
        memory.charges(serviceSid).map(({ verificationSid, amount }) => ({ verificationSid, amount })),
      async eventMarks(sid) {
        const marks = memory.eventMarks(sid);
        return { sequence: marks.sequence, at: marks.at?.toISOString() };
      },
    };
  },
});
