/** The storage ports' contract against `DynamoStore` on DynamoDB Local (the memory twin: test/core/). */
import { GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomBytes } from 'node:crypto';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/client';
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
import { createTable } from '../../local/table';
import { dynamoEndpoint } from '../support/harness';
import { describeStoreContract, type StoreFixture } from './store-contract';

let raw: DynamoDBClient;
let documents: DynamoDBDocumentClient;
const tableName = `otp-contract-${randomBytes(6).toString('hex')}`;

const put = async (item: Record<string, unknown>) => {
  await documents.send(new PutCommand({ TableName: tableName, Item: item }));
};
const get = async (key: { pk: string; sk: string }) =>
  (await documents.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }))).Item;

describeStoreContract('DynamoStore (DynamoDB Local)', {
  async setup() {
    const endpoint = dynamoEndpoint();
    raw = createDynamoClient({ endpoint });
    await createTable(raw, tableName);
    documents = createDocumentClient({ endpoint });
  },
  async fixture(): Promise<StoreFixture> {
    return {
      store: new DynamoStore(documents, tableName),
      endpoints: new DynamoWebhookEndpoints(documents, tableName),
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
        const { Items = [] } = await documents.send(
          new QueryCommand({
            TableName: tableName,
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
    raw?.destroy();
    documents?.destroy();
  },
});

describe('DynamoStore send reads on the wire', () => {
  const table = `otp-reads-${randomBytes(6).toString('hex')}`;
  let rawClient: DynamoDBClient;
  let client: DynamoDBDocumentClient;
  const batchReads: (boolean | undefined)[] = [];

  beforeAll(async () => {
    const endpoint = dynamoEndpoint();
    rawClient = createDynamoClient({ endpoint });
    await createTable(rawClient, table);
    client = createDocumentClient({ endpoint });
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { RequestItems?: Record<string, { ConsistentRead?: boolean }> };
        if (context.commandName === 'BatchGetItemCommand')
          batchReads.push(input.RequestItems?.[table]?.ConsistentRead);
        return next(args);
      },
      { step: 'initialize', name: 'recordBatchReads' },
    );
  });
  afterAll(() => {
    rawClient.destroy();
    client.destroy();
  });

  it('reads the send context eventually consistent unless asked for the latest', async () => {
    const store = new DynamoStore(client, table);
    const query = { serviceSid: 'VA00000000000000000000000000000001', e164: '+447400123456', country: 'GB' };
    await store.loadSendContext({ ...query, latest: false });
    await store.loadSendContext({ ...query, latest: true });
    expect(batchReads).toEqual([false, true]);
  });
});
