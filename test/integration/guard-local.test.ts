/**
 * The pumping guard end to end on the local stack (as `npm start` runs it): sends over HTTP, the table's stream
 * read by the guard's consumer (local/guard.ts, the GuardSignals Lambda's handler), and the next send of the
 * burst refused. Nothing here calls the consumer by hand.
 */
import { keys } from '../../functions/adapters/dynamodb/keys';
import type { GuardBlock } from '../../functions/core/guard/model';
import { startHarness, type Harness } from '../support/harness';

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({ guardConsumer: { intervalMs: 100 } });
});
afterAll(async () => {
  await harness.close();
});

/**
 * Polls until `probe` answers something, or fails after `timeoutMs`: generous, since under the full suite's load
 * (two workers sharing one DynamoDB Local) the consumer's reads of the stream can lag by seconds.
 */
async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 25_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`nothing after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('a burst of sequential numbers is refused with 403 blocked_by_policy once the consumer has read it', async () => {
  const account = await harness.createAccount();
  const api = harness.client(account);
  const sequentialBlock = (level: GuardBlock['level']) =>
    eventually(async () => {
      const key = keys.guardCountry(account.serviceSid, 'GB');
      const item = (await harness.scanTable()).find((i) => i.pk === key.pk && i.sk === key.sk);
      const state = item && (JSON.parse(item.state as string) as { blocks: GuardBlock[] });
      return state?.blocks.find((b) => b.reason === 'sequential_numbers' && b.level === level);
    });
  // GB mobiles two apart in one thousand (+447400555xxx). Four make a run at level strict only.
  for (const suffix of [101, 103, 105, 107]) {
    expect((await api.send({ To: `+447400555${suffix}` })).status).toBe(201);
  }
  // The consumer reads the stream by itself; its block lands on the state the send reads.
  await sequentialBlock('strict');
  // The service is at level standard (the default): a strict block does not refuse. The fifth makes the run.
  expect((await api.send({ To: '+447400555109' })).status).toBe(201);
  const block = await sequentialBlock('standard');
  expect(block.prefix).toBe('+447400555');

  const refused = await api.send({ To: '+447400555111' });
  expect(refused.status).toBe(403);
  expect(refused.body).toMatchObject({ code: 'blocked_by_policy' });
  // Only the run's thousand: another range of the country still gets its code.
  expect((await api.send({ To: '+447400777321' })).status).toBe(201);
  // The consumer's log line for the owner (and, on AWS, its metric).
  expect(harness.logs.some((line) => line.includes('guard.block_started'))).toBe(true);
}, 60_000);

test('without the consumer (the default for tests, OTP_GUARD_CONSUMER=off for npm start) the same burst is sent', async () => {
  const quiet = await startHarness();
  try {
    const api = quiet.client(await quiet.createAccount());
    for (const suffix of [101, 103, 105, 107, 109, 111, 113]) {
      expect((await api.send({ To: `+447400555${suffix}` })).status).toBe(201);
    }
    expect(quiet.stack.guard).toBeUndefined();
  } finally {
    await quiet.close();
  }
});
