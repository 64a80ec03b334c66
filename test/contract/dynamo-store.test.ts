/** The storage ports' contract against `DynamoStore` on DynamoDB Local (the memory twin: test/core/). */
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import {
  apiKeyToItems,
  serviceDirectoryToItem,
  serviceFromItem,
  serviceToItem,
  templateToItem,
  webhookEndpointToItem,
} from '../../functions/adapters/dynamodb/items';
import { SERVICE_CHILD_PREFIX, keys } from '../../functions/adapters/dynamodb/keys';
import { VERIFICATION_ATTR } from '../../functions/adapters/dynamodb/status-write';
import { DynamoStore } from '../../functions/adapters/dynamodb/store';
import { DynamoWebhookEndpoints } from '../../functions/adapters/dynamodb/webhooks';
import { freshTable, type TestTable } from '../support/table';
import { describeStoreContract, type StoreFixture } from './store-contract';

let table: TestTable;

const put = async (item: Record<string, unknown>) => {
  await table.documents.send(new PutCommand({ TableName: table.name, Item: item }));
};
const get = async (key: { pk: string; sk: string }) =>
  (await table.documents.send(new GetCommand({ TableName: table.name, Key: key, ConsistentRead: true })))
    .Item;

describeStoreContract('DynamoStore (DynamoDB Local)', {
  async setup() {
    table = await freshTable('contract');
  },
  async fixture(): Promise<StoreFixture> {
    return {
      store: new DynamoStore(table.documents, table.name),
      endpoints: new DynamoWebhookEndpoints(table.documents, table.name),
      // As createService does: the service and its directory entry (the sweeper finds the ledger through it).
      async putService(service) {
        await put(serviceToItem(service));
        await put(serviceDirectoryToItem(service));
      },
      putTemplate: (serviceSid, template) => put(templateToItem(serviceSid, template)),
      async putApiKey(record) {
        for (const item of apiKeyToItems(record)) await put(item);
      },
      putWebhookEndpoint: (endpoint) => put(webhookEndpointToItem(endpoint)),
      async balance(serviceSid) {
        const item = await get(keys.service(serviceSid));
        return item && serviceFromItem(item).balance;
      },
      async charges(serviceSid) {
        const { Items = [] } = await table.documents.send(
          new QueryCommand({
            TableName: table.name,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :charge)',
            ExpressionAttributeValues: {
              ':pk': keys.service(serviceSid).pk,
              ':charge': SERVICE_CHILD_PREFIX.charge,
            },
            ConsistentRead: true,
          }),
        );
        return Items.map((item) => ({
          verificationSid: item.verification_sid as string,
          amount: item.amount as number,
        }));
      },
      async eventMarks(sid) {
        const item = (await get(keys.verification(sid))) ?? {};
        const at = item[VERIFICATION_ATTR.eventAt];
        return {
          sequence: (item[VERIFICATION_ATTR.eventSeq] as number | undefined) ?? 0,
          at: typeof at === 'string' ? at : undefined,
        };
      },
    };
  },
  async teardown() {
    table?.close();
  },
});

describe('DynamoStore send reads on the wire', () => {
  let reads: TestTable;
  const batchReads: (boolean | undefined)[] = [];

  beforeAll(async () => {
    reads = await freshTable('reads');
    reads.documents.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { RequestItems?: Record<string, { ConsistentRead?: boolean }> };
        if (context.commandName === 'BatchGetItemCommand')
          batchReads.push(input.RequestItems?.[reads.name]?.ConsistentRead);
        return next(args);
      },
      { step: 'initialize', name: 'recordBatchReads' },
    );
  });
  afterAll(() => reads?.close());

  it('reads the send context eventually consistent unless asked for the latest', async () => {
    const store = new DynamoStore(reads.documents, reads.name);
    const query = { serviceSid: 'VA00000000000000000000000000000001', e164: '+447400123456', country: 'GB' };
    await store.loadSendContext({ ...query, latest: false, now: new Date() });
    await store.loadSendContext({ ...query, latest: true, now: new Date() });
    expect(batchReads).toEqual([false, true]);
  });
});
