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

it('a body that is not JSON is answered in words, not with the parser error', async () => {
  const answer = await rules('POST', '{"prefix":');
  expect(answer.status).toBe(400);
  expect(await answer.json()).toEqual({ code: 'invalid_parameter', message: 'The body is not valid JSON.' });
});

it.each([
  [[], 'The body must be a JSON object.'],
  [{ channels: {} }, 'prefix is required.'],
  [{ prefix: '447400', channels: {} }, 'prefix must be + and at most 15 digits, as "+447400".'],
  [{ prefix: '+447400' }, 'channels is required.'],
  [{ prefix: '+447400', channels: [] }, 'channels must be an object.'],
  [{ prefix: '+447400', channels: { fax: 'silent' } }, 'channels has no such key: fax.'],
  [
    { prefix: '+447400', channels: { sms: 'loud' } },
    'channels.sms must be "silent", "reject", "error", {"deliver": ms}, {"undeliverable": ms} or {"hang": ms}.',
  ],
  [{ prefix: '+447400', channels: { sms: { deliver: -1 } } }, 'channels.sms.deliver must be at least 0.'],
  [{ prefix: '+447400', channels: { sms: { hang: 600_001 } } }, 'channels.sms.hang must be at most 600000.'],
])('the rule %j is refused with one line naming the field', async (rule, message) => {
  const answer = await rules('POST', JSON.stringify(rule));
  expect(answer.status).toBe(400);
  expect(await answer.json()).toEqual({ code: 'invalid_parameter', message });
});

it('the inbox reads a + left unencoded in `to`, which arrives as a space, as the +', async () => {
  const to = '+14155550177';
  harness.stack.carrier.record({
    to,
    channel: 'sms',
    body: 'Your code is 482913',
    reference: 'local-routes-inbox',
    outcome: 'delivered',
    time: new Date().toISOString(),
  });
  for (const query of [`to=${encodeURIComponent(to)}`, `to=${to}`]) {
    const answer = await fetch(`${harness.stack.url}/_local/messages?${query}`);
    const messages = (await answer.json()) as { to: string; body: string }[];
    expect({ query, messages }).toMatchObject({ query, messages: [{ to, body: 'Your code is 482913' }] });
  }
});
