/**
 * The capacity model's sample (bench/capacity.ts) holds every request the service made for its verifications:
 * the API's, and the deliveries', which run beside the later sends. The meters' own counts are the oracle.
 * DynamoDB Local.
 */
import { randomBytes } from 'node:crypto';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { recordSample } from '../../bench/capacity';
import { startBenchService, type BenchService } from '../../bench/service';
import { createAccount, type BenchDb } from '../../bench/setup';
import { freshTable, type TestTable } from '../support/table';

let table: TestTable;
let db: BenchDb;
let service: BenchService | undefined;

beforeAll(async () => {
  table = await freshTable('bench-capacity');
  const { endpoint, name: tableName, documents } = table;
  const masterKey = randomBytes(32).toString('base64url');
  db = {
    endpoint,
    tableName,
    documents,
    masterKey,
    accounts: dynamoAccounts(documents, tableName, { apiKeyTag: masterKey }),
    stop: async () => undefined,
  };
});
afterAll(async () => {
  await service?.close();
  table?.close();
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
