/**
 * A send short of time: its function's time-out cut short here, so that the slowest DynamoDB call and the read
 * that settles a lost answer (`worstCallMs` each) barely fit. A charge is written only while both still fit, so a
 * send is never cut off by its own time-out with its charge standing: it answers 201 charged, or 503 uncharged.
 */
import { worstCallMs } from '../../functions/adapters/dynamodb/client';
import { Books, ledgerOf } from '../support/books';
import { DynamoFaults } from '../support/faults';
import { startHarness, type Account, type Harness } from '../support/harness';

/** The margin the send keeps for its answer (functions/http/api.ts), and a second to spare before a fault. */
const ANSWER_MARGIN_MS = 1000;
const SPARE_MS = 1000;
const SEND_TIMEOUT_MS = 2 * worstCallMs() + ANSWER_MARGIN_MS + SPARE_MS;
/** A fault this slow eats the spare second and more. */
const SLOWER_THAN_SPARE_MS = SPARE_MS + 300;

let harness: Harness;
let books: Books;
const faults = new DynamoFaults();

beforeAll(async () => {
  harness = await startHarness({
    settings: { keyRequestsPerMinute: 100_000 },
    decorateDynamoClient: faults.install,
    functionTimeoutsMs: { send: SEND_TIMEOUT_MS },
  });
  books = new Books(harness);
});
afterEach(() => faults.reset());
afterAll(async () => {
  await harness.stack.workflow.idle();
  expect(await books.audit()).toEqual([]);
  await harness.close();
});

let counter = 0;
const freshUsNumber = () => `+1415555${String(4000 + ++counter).padStart(4, '0')}`;

async function ledger(account: Account) {
  return ledgerOf(await harness.scanTable(), account.serviceSid);
}

describe('a send short of time', () => {
  it('with the spare time left, it sends as usual: 201, charged once', async () => {
    const account = await books.open(1);
    const response = await harness.client(account).send({ To: freshUsNumber() });
    expect(response.status).toBe(201);
    expect((await ledger(account)).charges.map((line) => line.verification_sid)).toEqual([response.body.sid]);
  });

  it('a slow read leaves too little time to settle a charge: 503, no transaction sent, nothing charged', async () => {
    const account = await books.open(1);
    const slow = faults.inject({ operation: 'BatchGetItem', kind: 'slow', delayMs: SLOWER_THAN_SPARE_MS });
    const response = await harness.client(account).send({ To: freshUsNumber() });
    expect(slow.fired).toBe(1);
    expect(response.status).toBe(503);
    expect(response.body.code).toBe('service_unavailable');
    expect(faults.calls.filter((call) => call.operation === 'TransactWriteItems')).toEqual([]);
    expect(await ledger(account)).toEqual({ verifications: [], charges: [] });
    expect((await harness.accounts.getService(account.serviceSid))!.balance).toBe(10_000);
  });

  it('a lost answer that came late is not resent: the read settles it, 201, charged once', async () => {
    const account = await books.open(1);
    // The transaction is held, then applied with every attempt's answer lost: a resend would not leave time for
    // the read that settles it.
    faults.inject({ operation: 'TransactWriteItems', kind: 'slow', delayMs: SLOWER_THAN_SPARE_MS });
    const lost = faults.inject({
      operation: 'TransactWriteItems',
      kind: 'internal',
      timing: 'after',
      layer: 'attempt',
      times: 3,
    });
    const response = await harness.client(account).send({ To: freshUsNumber() });
    expect(lost.fired).toBe(3);
    expect(response.status).toBe(201);
    expect(faults.calls.filter((call) => call.operation === 'TransactWriteItems')).toHaveLength(1);
    const { charges, verifications } = await ledger(account);
    expect(charges.map((line) => line.verification_sid)).toEqual([response.body.sid]);
    expect(verifications.map((item) => item.sid)).toEqual([response.body.sid]);
  });
});
