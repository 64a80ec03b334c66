/**
 * The webhook sender records every delivery attempt in the table (`SERVICE#<VA>` /
 * `WEBHOOKDELIVERY#...`, 7-day TTL, never the payload or a secret), and the console shows them: the webhooks page
 * lists the service's recent deliveries and failures, a verification's timeline its own. Against DynamoDB Local,
 * through the local stack's real sender, its receiver (one endpoint answering 200, one answering 500) and the
 * console's HTTP API.
 */
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { DynamoWebhookDeliveries } from '../../functions/adapters/dynamodb/webhooks';
import { BY_TEST, dynamoEndpoint, eventually, startHarness, type Harness } from '../support/harness';

/** The nine-attempt schedule in about a second (test/integration/webhooks.test.ts). */
const BACKOFF_SCALE = 0.00001;

let harness: Harness;
let token: string;

beforeAll(async () => {
  harness = await startHarness({
    settings: { channelWaitSeconds: 1 },
    // The receiver answers at once; 400 ms let one attempt time out (no status) on a loaded machine.
    env: { OTP_WEBHOOK_BACKOFF_SCALE: String(BACKOFF_SCALE), OTP_WEBHOOK_TIMEOUT_MS: '3000' },
  });
  token = await harness.consoleToken('hooks@example.com');
});
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

async function consoleApi<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${harness.stack.url}/console/api${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  expect(response.status).toBeLessThan(300);
  return (await response.json()) as T;
}

interface Delivery {
  at: string;
  endpointSid: string;
  eventId: string;
  eventType: string;
  verificationSid: string | null;
  attempt: number;
  status: number | null;
  error: string | null;
  durationMs: number;
  delivered: boolean;
  final: boolean;
  text: string;
}

test('a delivered webhook and a failing one (HTTP 500) show on the webhooks page and on the timeline', async () => {
  const account = await harness.createAccount();
  const sid = account.serviceSid;
  await harness.accounts.addMember(BY_TEST, sid, 'hooks@example.com', 'hooks@example.com');
  const receiver = `${harness.stack.url}/_local/webhooks/receiver`;
  const good = await consoleApi<{ endpointSid: string; secret: string }>(
    'POST',
    `/services/${sid}/webhooks`,
    {
      url: receiver,
    },
  );
  const bad = await consoleApi<{ endpointSid: string; secret: string }>('POST', `/services/${sid}/webhooks`, {
    url: `${receiver}?status=500`,
  });

  const to = '+447400398001';
  harness.stack.carrier.setRule({ prefix: to, channels: { sna: { deliver: 50 } } });
  const sent = await harness.client(account).send({ To: to });
  expect(sent.status).toBe(201);
  const ve = sent.body.sid as string;

  // The good endpoint's one attempt, and all nine of the bad one's, the last marked final (gave up).
  const page = await eventually(async () => {
    const answer = await consoleApi<{ deliveries: Delivery[] }>('GET', `/services/${sid}/webhooks`);
    const finalFailure = answer.deliveries.some((d) => d.endpointSid === bad.endpointSid && d.final);
    const success = answer.deliveries.some((d) => d.endpointSid === good.endpointSid && d.delivered);
    return finalFailure && success ? answer : undefined;
  });
  const ofGood = page.deliveries.filter((d) => d.endpointSid === good.endpointSid);
  const ofBad = page.deliveries.filter((d) => d.endpointSid === bad.endpointSid);
  expect(ofGood).toEqual([
    expect.objectContaining({
      eventType: 'verification.delivery.delivered',
      verificationSid: ve,
      attempt: 1,
      status: 200,
      error: null,
      delivered: true,
      final: false,
    }),
  ]);
  expect(ofBad.map((d) => [d.attempt, d.status, d.delivered, d.final])).toEqual(
    [9, 8, 7, 6, 5, 4, 3, 2, 1].map((n) => [n, 500, false, n === 9]),
  );
  expect(ofBad[0]!.text).toContain('HTTP 500');
  expect(ofBad[0]!.text).toContain('gave up');
  // Newest first.
  const times = page.deliveries.map((d) => d.at);
  expect([...times].sort().reverse()).toEqual(times);

  // The timeline of the verification shows the same ten attempts, failures marked.
  const timeline = await consoleApi<{ entries: { kind: string; text: string; at?: string }[] }>(
    'GET',
    `/services/${sid}/verifications/${ve}`,
  );
  const webhookEntries = timeline.entries.filter((e) => e.kind.startsWith('webhook'));
  expect(webhookEntries).toHaveLength(10);
  expect(webhookEntries.filter((e) => e.kind === 'webhook')).toEqual([
    expect.objectContaining({ text: expect.stringContaining(`${good.endpointSid}, attempt 1: HTTP 200`) }),
  ]);
  expect(webhookEntries.filter((e) => e.kind === 'webhook-failed')).toHaveLength(9);
  expect(timeline.entries.some((e) => /not kept in the table/.test(e.text))).toBe(false);

  // Another verification of the same service: its timeline shows none of these.
  const other = await harness.client(account).send({ To: '+447400398002' });
  const otherTimeline = await consoleApi<{ entries: { kind: string; text: string }[] }>(
    'GET',
    `/services/${sid}/verifications/${other.body.sid as string}`,
  );
  expect(otherTimeline.entries.filter((e) => e.kind.startsWith('webhook'))).toEqual([]);

  // In the table: small items under the service with a 7-day TTL, never the payload, the code or a secret.
  const items = (await harness.scanTable()).filter((item) => item.pk === `WEBHOOKDELIVERY#${sid}`);
  expect(items.length).toBeGreaterThanOrEqual(10);
  for (const item of items) {
    expect(Object.keys(item).sort()).toEqual(
      expect.arrayContaining(['pk', 'sk', 'endpoint_sid', 'event_type', 'attempt', 'duration_ms', 'ttl']),
    );
    expect(item.ttl).toBe(Math.floor(Date.parse(item.at as string) / 1000) + 7 * 86_400);
    const text = JSON.stringify(item);
    expect(text).not.toContain(good.secret);
    expect(text).not.toContain(bad.secret);
    expect(text).not.toContain(to);
    expect(text).not.toContain('"data"');
  }
}, 30_000);

test('a delivery record that cannot be written is logged, never thrown (the delivery goes on)', async () => {
  const lines: string[] = [];
  const client = createDocumentClient({ endpoint: dynamoEndpoint() });
  try {
    const log = new DynamoWebhookDeliveries(client, 'no-such-table', {
      log: (level, message, fields) => void lines.push(`${level} ${message} ${JSON.stringify(fields)}`),
    });
    await expect(
      log.record({
        serviceSid: `VA${'0'.repeat(32)}`,
        endpointSid: `WH${'0'.repeat(32)}`,
        eventId: `EV${'0'.repeat(32)}`,
        eventType: 'verification.verified',
        at: new Date().toISOString(),
        attempt: 1,
        status: 200,
        durationMs: 12,
        delivered: true,
        final: false,
      }),
    ).resolves.toBeUndefined();
    expect(lines).toEqual([
      expect.stringMatching(/^warn webhook\.record_failed .*ResourceNotFoundException/),
    ]);
  } finally {
    client.destroy();
  }
});
