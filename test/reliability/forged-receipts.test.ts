/**
 * A flood of forged receipt callbacks costs no DynamoDB request: each provider's signature is decided in memory
 * (the carrier's HMAC with the key ring's `receipt:carrier` key, Vonage's signed-webhook JWT with its signature
 * secret) before the receipt handler reads or writes anything; the table is reached only by a callback the
 * provider really signed. Counted on the service's own DynamoDB client, every operation, through the real HTTP
 * route of the local stack with the real provider adapters.
 */
import { randomBytes } from 'node:crypto';
import { deriveKey } from '../../functions/adapters/crypto';
import { SIGNATURE_HEADER, signPayload } from '../../functions/adapters/providers/signature';
import { startHarness, type Harness } from '../support/harness';

let harness: Harness;
/** DynamoDB operations the service sent (its client's middleware, once per call whatever the retries). */
const operations: string[] = [];

beforeAll(async () => {
  harness = await startHarness({
    providerSimulator: true,
    decorateDynamoClient: (client) => {
      client.middlewareStack.add(
        (next, context) => (args) => {
          operations.push(String(context.commandName));
          return next(args);
        },
        { step: 'initialize', name: 'countDynamoOperations' },
      );
    },
  });
}, 120_000);
afterAll(() => harness.close());

const post = (provider: string, body: string, headers: Record<string, string>) =>
  fetch(`${harness.stack.url}/v2/Callbacks/${provider}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

/** A reference the service could have handed out (a well-formed SID and channel index), naming nothing. */
const reference = () => `VE${randomBytes(16).toString('hex')}.0`;

function forgedCarrier(i: number): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({ reference: reference(), messageId: `SM${i}`, status: 'delivered' });
  const now = harness.clock.now();
  const genuineKey = deriveKey(harness.masterKey, 'receipt:carrier');
  switch (i % 5) {
    case 0: // signed with another key
      return { body, headers: { [SIGNATURE_HEADER]: signPayload(randomBytes(32), body, now) } };
    case 1: // unsigned
      return { body, headers: {} };
    case 2: // the right key, too old
      return {
        body,
        headers: { [SIGNATURE_HEADER]: signPayload(genuineKey, body, new Date(now.getTime() - 3_600_000)) },
      };
    case 3: // the right key over another body
      return { body, headers: { [SIGNATURE_HEADER]: signPayload(genuineKey, `${body} `, now) } };
    default: // junk
      return { body, headers: { [SIGNATURE_HEADER]: `t=1,v1=${'0'.repeat(64)}` } };
  }
}

function forgedVonage(i: number): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    message_uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    status: 'delivered',
    client_ref: reference(),
  });
  const now = harness.clock.now();
  const simulator = harness.stack.providerSimulator!;
  switch (i % 4) {
    case 0: // signed with another secret
      return {
        body,
        headers: {
          authorization: `Bearer ${simulator.signedVonageCallback(body, now, { secret: 'not-the-signature-secret-0123' })}`,
        },
      };
    case 1: // the right secret over another body
      return {
        body,
        headers: { authorization: `Bearer ${simulator.signedVonageCallback(`${body} `, now)}` },
      };
    case 2: // the right secret, expired
      return {
        body,
        headers: {
          authorization: `Bearer ${simulator.signedVonageCallback(body, new Date(now.getTime() - 3_600_000))}`,
        },
      };
    default: // no token
      return { body, headers: {} };
  }
}

test('a flood of forged callbacks, carrier and Vonage, is refused with 401 and makes no DynamoDB request', async () => {
  operations.length = 0;
  const statuses: number[] = [];
  for (let batch = 0; batch < 10; batch++) {
    const requests = Array.from({ length: 20 }, (_, j) => {
      const i = batch * 20 + j;
      const { body, headers } = i % 2 === 0 ? forgedCarrier(i / 2) : forgedVonage((i - 1) / 2);
      return post(i % 2 === 0 ? 'carrier' : 'vonage', body, headers);
    });
    for (const response of await Promise.all(requests)) statuses.push(response.status);
  }
  expect(statuses).toHaveLength(200);
  expect(new Set(statuses)).toEqual(new Set([401]));
  // And an unknown provider's path: 404, nothing read.
  expect((await post('pigeon', '{}', {})).status).toBe(404);
  expect(operations).toEqual([]);
});

test('the count is real: a genuinely signed callback reaches the table (carrier: the read; Vonage: the spent token too)', async () => {
  operations.length = 0;
  const now = harness.clock.now();
  const carrierBody = JSON.stringify({ reference: reference(), messageId: 'SM1', status: 'delivered' });
  const signed = signPayload(deriveKey(harness.masterKey, 'receipt:carrier'), carrierBody, now);
  // Signed for a reference that names no verification: acknowledged (the provider stops retrying), changes nothing.
  expect((await post('carrier', carrierBody, { [SIGNATURE_HEADER]: signed })).status).toBe(200);
  expect(operations).toEqual(['GetItemCommand']);

  operations.length = 0;
  const vonageBody = JSON.stringify({
    message_uuid: '00000000-0000-4000-8000-000000000001',
    status: 'delivered',
    client_ref: reference(),
  });
  const token = harness.stack.providerSimulator!.signedVonageCallback(vonageBody, now);
  expect((await post('vonage', vonageBody, { authorization: `Bearer ${token}` })).status).toBe(200);
  expect(operations).toEqual(['PutItemCommand', 'GetItemCommand']);
});
