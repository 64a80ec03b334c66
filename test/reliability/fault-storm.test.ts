/**
 * Faults at random on the send path, many at once: whichever calls they hit and in whatever order the sends
 * interleave, the money stays exact. The fixed fault patterns of faults.test.ts and balance-shards.test.ts each
 * test one path; a bug there showed only when CPU load moved a fault onto another call (docs/reliability.md,
 * bug 5). Here each seed draws the faults per call, over sends racing for a small balance on shards, sends to
 * the same numbers, and top-ups.
 */
import { mulberry32 } from '../../bench/guard/population';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import type { Accounts } from '../../functions/core/accounts/accounts';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { booksUnderFaults, ledgerOf, type Books } from '../support/books';
import { DynamoFaults, type DynamoCall, type FaultRule } from '../support/faults';
import { BY_TEST, dynamoEndpoint, type ApiResponse, type Harness } from '../support/harness';

const PRICE_US = 500;
const faults = new DynamoFaults();
// After the seeds, every service's shards, charge lines and credit lines add up, in the scan and the core's proof.
const setting = booksUnderFaults(faults);
let harness: Harness;
let books: Books;
/** The accounts core on a client with the faults, for the top-ups (the harness's own has none). */
let accounts: Accounts;
let storming: { destroy(): void };

beforeAll(() => {
  ({ harness, books } = setting);
  const client = createDocumentClient({ endpoint: dynamoEndpoint() });
  faults.install(client);
  accounts = dynamoAccounts(client, harness.tableName, { apiKeyTag: harness.masterKey });
  storming = client;
});
afterAll(() => storming.destroy());

let counter = 0;
const freshUsNumber = () => `+1415555${String(8000 + ++counter).padStart(4, '0')}`;
const isBalanceItem = (_pk: string, sk: string) => sk === 'SERVICE' || sk === 'BALANCE';
/**
 * The reads that settle a send or a top-up whose answers were lost. When DynamoDB fails them too, the outcome
 * cannot be known: a send answers 5xx, and only a retry with its key can tell (the keyed sends below); a top-up
 * answers an error.
 */
const isSettlingRead = (call: DynamoCall) =>
  call.operation === 'GetItem' &&
  (call.pks.every((pk) => pk.startsWith('VERIFICATION#')) || call.sks.some((sk) => sk.startsWith('CREDIT#')));

/** Each rule fails a share of the calls it matches, drawn from the seed. */
function storm(seed: number): void {
  const rand = mulberry32(seed);
  const share = (p: number) => (call: DynamoCall) => !isSettlingRead(call) && rand() < p;
  const rules: FaultRule[] = [
    { operation: 'TransactWriteItems', kind: 'conflict', conflictOn: isBalanceItem, where: share(0.3) },
    {
      operation: 'TransactWriteItems',
      kind: 'conflict',
      conflictOn: (pk) => pk.startsWith('NUMBER#'),
      where: share(0.15),
    },
    { operation: 'TransactWriteItems', kind: 'internal', timing: 'after', where: share(0.2) },
    { operation: 'TransactWriteItems', kind: 'in-progress', timing: 'after', where: share(0.05) },
    {
      operation: 'TransactWriteItems',
      kind: 'throttling',
      timing: 'after',
      layer: 'attempt',
      where: share(0.15),
    },
    { operation: 'UpdateItem', kind: 'internal', timing: 'after', layer: 'attempt', where: share(0.1) },
    { kind: 'internal', timing: 'before', where: share(0.03) },
  ];
  for (const rule of rules) faults.inject({ ...rule, times: Number.MAX_SAFE_INTEGER });
}

it.each([1, 2, 3, 4, 5, 6, 7, 8])(
  'seed %i: every 201 charged once, nothing else charged; a 5xx retried with its key is 201 or 402',
  async (seed) => {
    const worth = 8;
    const account = await books.open((worth * PRICE_US) / 10_000);
    await harness.accounts.spreadBalance(BY_TEST, account.serviceSid, String(1 + (seed % 4)));
    const api = harness.client(account);
    const numbers = Array.from({ length: 12 }, freshUsNumber);
    // A third of the sends carry an Idempotency-Key: a key also guards a send decided again (its second transaction
    // is refused on the key the first one wrote), so keyless sends are the stricter test.
    const sends: { key?: string; to: string; response?: ApiResponse }[] = [];

    storm(seed);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 3 * worth; i++) {
      if (i % 9 === 8) {
        // A top-up that answers an error was not applied (docs/reliability.md, bug 7): the books leave it out.
        work.push(
          accounts.topUp(BY_TEST, account.serviceSid, PRICE_US).then(
            () => books.paid(account, PRICE_US),
            () => undefined,
          ),
        );
        continue;
      }
      const send: (typeof sends)[number] = {
        to: numbers[(i * 7 + seed) % numbers.length]!,
        ...(i % 3 === 0 && { key: `storm-${seed}-${i}` }),
      };
      sends.push(send);
      const headers: Record<string, string> = send.key ? { 'idempotency-key': send.key } : {};
      work.push(api.send({ To: send.to }, { headers }).then((response) => (send.response = response)));
    }
    await Promise.all(work);
    faults.reset();
    const statuses = sends.map((send) => send.response!.status);
    expect(statuses.every((status) => [201, 402, 429, 500, 503].includes(status))).toBe(true);

    // A 5xx says nothing of whether the send stood (DynamoDB's answers were lost): its retry with the same key
    // tells, as api.md says. Charged behind it, the retry is that verification, not charged again.
    for (const send of sends.filter(({ key, response }) => key && response!.status >= 500)) {
      send.response = await api.send({ To: send.to }, { headers: { 'idempotency-key': send.key! } });
      expect([201, 402, 429]).toContain(send.response.status);
    }
    const accepted = sends
      .filter(({ response }) => response!.status === 201)
      .map(({ response }) => response!.body.sid as string);
    const { verifications, charges } = ledgerOf(await harness.scanTable(), account.serviceSid);
    expect(verifications.map((item) => item.sid).sort()).toEqual([...new Set(accepted)].sort());
    expect(charges.map((line) => line.verification_sid).sort()).toEqual([...new Set(accepted)].sort());
  },
  60_000,
);
