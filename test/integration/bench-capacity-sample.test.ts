/**
 * The capacity model's sample (bench/capacity.ts) holds every request the service made for its verifications:
 * the API's, and the deliveries', which run beside the later sends. The meters' own counts are the oracle.
 * DynamoDB Local.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/client';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { recordSample } from '../../bench/capacity';
import { startBenchService, type BenchService } from '../../bench/service';
import { createAccount, type BenchDb } from '../../bench/setup';
import { createTable } from '../../local/table';
import { dynamoEndpoint } from '../support/harness';

let documents: DynamoDBDocumentClient;
let db: BenchDb;
let service: BenchService | undefined;

beforeAll(async () => {
  const tableName = `otp-bench-capacity-${randomBytes(4).toString('hex')}`;
  const raw = createDynamoClient({ endpoint: dynamoEndpoint() });
  await createTable(raw, tableName);
  raw.destroy();
  documents = createDocumentClient({ endpoint: dynamoEndpoint() });
  const masterKey = randomBytes(32).toString('base64url');
  db = {
    endpoint: dynamoEndpoint(),
    tableName,
    documents,
    masterKey,
    accounts: dynamoAccounts(documents, tableName, { apiKeyTag: masterKey }),
    stop: async () => undefined,
  };
});
afterAll(async () => {
  await service?.close();
  documents?.destroy();
});

test("the sample holds every API and delivery request, receipts that came during later sends' included", async () => {
  // As `npm run bench` runs it: a 1 s receipt wait, no per-key limit, every request priced.
  service = await startBenchService(db, {
    settings: { channelWaitSeconds: 1, keyRequestsPerMinute: 1_000_000_000 },
    modelCapacity: true,
  });
  const caller = await createAccount(db, 1_000);
  const { api, tasks, receipts, polls } = service.meters;
  const metered = { api, tasks, receipts, polls };
  const before = Object.fromEntries(Object.entries(metered).map(([name, meter]) => [name, meter.calls]));
  // Enough sends that the first deliveries' receipts (100 ms after the hand-over) come while others are sent.
  const sample = 30;
  const { requests } = await recordSample(service, caller, sample);
  for (const [name, meter] of Object.entries(metered)) {
    const recorded = requests.filter((request) => request.meter === name).length;
    expect({ meter: name, recorded }).toEqual({ meter: name, recorded: meter.calls - before[name]! });
  }
  // Each verification's receipt callback is there, whenever it came.
  const receiptWrites = requests.filter(
    (request) => request.meter === 'receipts' && request.items.some((item) => item.wcu > 0),
  );
  expect(receiptWrites).toHaveLength(sample);
}, 60_000);
