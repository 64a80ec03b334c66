/**
 * The local stack's own routes (`/_local/...`, docs/local.md) as the docs' curl calls reach them, over HTTP.
 */
import { startHarness, type Harness } from '../support/harness';

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness();
});
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

const rules = (method: string, body?: string) =>
  fetch(`${harness.stack.url}/_local/carrier/rules`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined && { body }),
  });

it('POST sets a carrier rule and DELETE clears the rules', async () => {
  const set = await rules('POST', JSON.stringify({ prefix: '+447400', channels: { sna: 'silent' } }));
  expect(set.status).toBe(200);
  expect(harness.stack.carrier.behaviourFor('+447400123456', 'sna')).toBe('silent');

  const cleared = await rules('DELETE');
  expect(cleared.status).toBe(200);
  expect(await cleared.json()).toEqual({ cleared: true });
  expect(harness.stack.carrier.behaviourFor('+447400123456', 'sna')).toEqual({ deliver: 200 });
});
