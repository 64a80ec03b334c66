/**
 * The business metrics, as CloudWatch would read them: the local stack wired with the real EMF adapter
 * (functions/adapters/metrics.ts, Powertools Metrics), stdout captured at the flush, and the embedded-metric-format
 * lines parsed. A send that falls back from a rejecting channel and is delivered, a wrong and a right check, a
 * refused send and a send whose every channel rejects: each writes exactly the counts an owner's dashboard and
 * the failed-delivery alarm read (names, namespace and dimensions from functions/core/metrics.ts).
 */
import { EmfMetrics } from '../../functions/adapters/metrics';
import { METRIC, METRICS_NAMESPACE, SERVICE_DIMENSION, type MetricName } from '../../functions/core/metrics';
import { startHarness, eventually, type ApiClient, type Harness } from '../support/harness';
import { emfProblems, flushedEmf, type EmfDocument } from '../support/emf';

const SERVICE = 'otp-metrics-test';

interface EmfLine {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit: string }[];
    }[];
  };
  [key: string]: unknown;
}

let harness: Harness;
let api: ApiClient;
const metrics = new EmfMetrics({ serviceName: SERVICE });
let lines: EmfLine[] = [];
let counter = 0;
const freshMobile = () => `+447400${String(1_200_000 + ++counter).slice(1)}`;

/** The EMF lines the adapter wrote since the last flush. */
const flush = () => flushedEmf<EmfLine>(metrics);

/** The sum of a metric over the EMF lines whose dimensions are exactly `service` and `dimensions`. */
function total(name: MetricName, dimensions: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of lines) {
    const [directive] = line._aws.CloudWatchMetrics;
    if (!directive?.Metrics.some((metric) => metric.Name === name)) continue;
    const expected = [SERVICE_DIMENSION, ...Object.keys(dimensions)].sort();
    if (JSON.stringify([...(directive.Dimensions[0] ?? [])].sort()) !== JSON.stringify(expected)) continue;
    if (line[SERVICE_DIMENSION] !== SERVICE) continue;
    if (!Object.entries(dimensions).every(([key, value]) => line[key] === value)) continue;
    const value = line[name] as number | number[];
    sum += Array.isArray(value) ? value.reduce((a, b) => a + b, 0) : value;
  }
  return sum;
}

beforeAll(async () => {
  harness = await startHarness({ settings: { channelWaitSeconds: 1 }, metrics });
  api = harness.client(await harness.createAccount());

  // Falls back from a rejecting SNA to Viber, which delivers.
  const to = freshMobile();
  harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'reject', viber: { deliver: 50 } } });
  const sent = await api.send({ To: to });
  expect(sent.status).toBe(201);
  const sid = sent.body.sid as string;
  await eventually(
    async () => ((await api.fetch(sid)).body.delivery_status === 'DELIVERED' ? true : undefined),
    15_000,
    100,
  );
  const code = await api.latestCode(to);
  const wrong = code === '000000' ? '111111' : '000000';
  expect((await api.check({ VerificationSid: sid, Code: wrong })).status).toBe(422);
  expect((await api.check({ VerificationSid: sid, Code: code })).status).toBe(200);

  // Refused: not a number.
  expect((await api.send({ To: '+1' })).body.code).toBe('unroutable');

  // Every channel rejects: FAILED.
  const failing = freshMobile();
  harness.stack.carrier.setRule({
    prefix: failing,
    channels: { sna: 'reject', viber: 'reject', whatsapp: 'reject', rcs: 'reject', sms: 'reject' },
  });
  const doomed = (await api.send({ To: failing })).body.sid as string;
  await eventually(
    async () => ((await api.fetch(doomed)).body.delivery_status === 'FAILED' ? true : undefined),
    15_000,
    100,
  );
  await harness.stack.workflow.idle();
  lines = flush();
}, 60_000);
afterAll(() => harness.close());

describe('EMF lines of a send, a check and deliveries', () => {
  it('are in one namespace, each with the service dimension, and follow the embedded metric format', () => {
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) {
      expect([line, emfProblems(line as EmfDocument)]).toEqual([line, []]);
      for (const directive of line._aws.CloudWatchMetrics) {
        expect(directive.Namespace).toBe(METRICS_NAMESPACE);
        for (const set of directive.Dimensions) expect(set).toContain(SERVICE_DIMENSION);
      }
      expect(line[SERVICE_DIMENSION]).toBe(SERVICE);
      expect(typeof line._aws.Timestamp).toBe('number');
    }
  });

  it('sends: two accepted, one refused by its error code', () => {
    expect(total(METRIC.sendsAccepted)).toBe(2);
    expect(total(METRIC.sendsRefused, { code: 'unroutable' })).toBe(1);
  });

  it('checks by outcome: one wrong, one verified (conversion = verified / accepted)', () => {
    expect(total(METRIC.checks, { outcome: 'wrong_code' })).toBe(1);
    expect(total(METRIC.checks, { outcome: 'verified' })).toBe(1);
  });

  it('deliveries by channel and outcome, the fallback, and the receipt latency', () => {
    expect(total(METRIC.deliveries, { channel: 'sna', outcome: 'rejected' })).toBe(2);
    expect(total(METRIC.deliveries, { channel: 'viber', outcome: 'accepted' })).toBe(1);
    expect(total(METRIC.deliveries, { channel: 'viber', outcome: 'delivered' })).toBe(1);
    // The delivered send fell back once (SNA to Viber); the failed one four times.
    expect(total(METRIC.fallbacks, { channel: 'sna' })).toBe(2);
    const latency = lines.find((line) => METRIC.receiptLatency in line && line.channel === 'viber');
    // Metrics of one dimension set share a line (here Fallbacks too: dimension `channel`).
    expect(latency?._aws.CloudWatchMetrics[0]?.Metrics).toContainEqual({
      Name: METRIC.receiptLatency,
      Unit: 'Milliseconds',
    });
    expect(latency?.[METRIC.receiptLatency]).toBeGreaterThanOrEqual(0);
  });

  it('the failed delivery: DeliveriesFailed (the alarm) and DeliveriesEnded by status', () => {
    expect(total(METRIC.deliveriesFailed)).toBe(1);
    expect(total(METRIC.deliveriesEnded, { status: 'FAILED' })).toBe(1);
  });

  it('hold no SID, number or code', () => {
    const text = JSON.stringify(lines);
    expect(text).not.toMatch(/VE[0-9a-f]{32}|VA[0-9a-f]{32}|\+447400/);
  });

  it('a second flush writes nothing: each invocation flushes only its own', () => {
    expect(flush()).toEqual([]);
  });
});
