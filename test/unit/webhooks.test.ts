/**
 * Webhooks, the pure parts and the sender with fake ports: which changes are events and what they carry, the
 * fan-out to endpoints, the retry schedule, the URL policy, Standard Webhooks signatures, sealed secrets.
 */
import type { Verification } from '../../functions/core/model';
import { toView } from '../../functions/core/verification';
import {
  ENDPOINT_PAUSE,
  EndpointPauses,
  MAX_DELIVERY_ATTEMPTS,
  RETRY_DELAYS_SECONDS,
  checkWebhookUrl,
  eventsForChange,
  isPublicAddress,
  publishVerificationChanges,
  retryDelaySeconds,
  runWebhookJob,
  scheduleAt,
  webhookEventId,
  webhookSettingsFromEnv,
  type QueuedJob,
  type VerificationChange,
  type WebhookEndpoint,
  type WebhookJob,
  type WebhookQueue,
  type WebhookRequest,
  type WebhookResponse,
  type WebhookSenderDeps,
  type WebhookDeliveryRecord,
} from '../../functions/core/webhooks';
import { EndpointSigner, WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';
import {
  newWebhookSecret,
  signWebhookContent,
  verifyWebhook,
  WEBHOOK_SECRET_PREFIX,
} from '../../functions/adapters/webhooks/signing';
import { FakeClock } from '../support/fake-clock';
import { CREATED_AT, SERVICE_SID, VERIFICATION_SID, aVerification } from '../support/fixtures';

const SERVICE = SERVICE_SID;
const SID = VERIFICATION_SID;
const ENDPOINT = 'WH0123456789abcdef0123456789abcdef';
const T0 = CREATED_AT;

const verification = aVerification;

const change = (
  before: Partial<Verification> | undefined,
  after: Partial<Verification>,
  sequence = 1,
  at = new Date(T0.getTime() + 2000),
): VerificationChange => ({
  ...(before && { before: verification(before) }),
  after: verification(after),
  sequence,
  at,
});

describe('eventsForChange', () => {
  it.each([
    [{ deliveryStatus: 'SENT' }, 'verification.delivery.sent'],
    [{ deliveryStatus: 'DELIVERED', channel: 'viber' }, 'verification.delivery.delivered'],
    [{ deliveryStatus: 'FAILED' }, 'verification.delivery.failed'],
    [{ status: 'VERIFIED', attemptsRemaining: 4 }, 'verification.verified'],
    [{ status: 'LOCKED', attemptsRemaining: 0 }, 'verification.locked'],
    [{ status: 'EXPIRED' }, 'verification.expired'],
  ] as const)('%o is %s', (after, type) => {
    const events = eventsForChange(change({}, after, 3));
    expect(events.map((event) => event.type)).toEqual([type]);
    expect(events[0]!.sequence).toBe(3);
  });

  it('a code verified before the receipt: the later delivered event carries the VERIFIED status too', () => {
    const verified = { status: 'VERIFIED' as const, attemptsRemaining: 4 };
    const [first] = eventsForChange(change({}, verified, 1));
    const [second] = eventsForChange(change(verified, { ...verified, deliveryStatus: 'DELIVERED' }, 2));
    expect(first).toMatchObject({ type: 'verification.verified', sequence: 1 });
    // A consumer that ignores the lower sequence (docs/webhooks.md) still learns of the verification from data.
    expect(second).toMatchObject({
      type: 'verification.delivery.delivered',
      sequence: 2,
      data: { status: 'VERIFIED', delivery_status: 'DELIVERED' },
    });
  });

  it('SENT then a late receipt: delivered, with a higher sequence', () => {
    const [event] = eventsForChange(change({ deliveryStatus: 'SENT' }, { deliveryStatus: 'DELIVERED' }, 2));
    expect(event).toMatchObject({ type: 'verification.delivery.delivered', sequence: 2 });
  });

  it('no event for a new verification, a wrong code, a channel tried, or an unchanged status', () => {
    expect(eventsForChange(change(undefined, {}))).toEqual([]);
    expect(eventsForChange(change({}, { attemptsRemaining: 4 }))).toEqual([]);
    const tried = { sna: { channel: 'sna' as const, outcome: 'accepted' as const, at: T0.toISOString() } };
    expect(eventsForChange(change({}, { deliveries: tried }))).toEqual([]);
    expect(eventsForChange(change({ status: 'VERIFIED' }, { status: 'VERIFIED' }))).toEqual([]);
  });

  it('carries the verification exactly as fetch shows it at the time of the change, and never the code', () => {
    const at = new Date(T0.getTime() + 5000);
    const after = verification({ deliveryStatus: 'DELIVERED', channel: 'viber' });
    const [event] = eventsForChange({ before: verification(), after, sequence: 1, at });
    expect(event!.data).toEqual(toView(after, at));
    expect(Object.keys(event!)).toEqual(['id', 'type', 'created_at', 'sequence', 'data']);
    expect(event!.created_at).toBe(at.toISOString());
    const text = JSON.stringify(event);
    for (const secret of ['hash-of-the-code', 'sealed.code.value', 'Your code is', 'code_hash', 'message']) {
      expect(text).not.toContain(secret);
    }
  });

  it('a delivery event after expiry shows status EXPIRED, as fetch would', () => {
    const at = new Date(T0.getTime() + 301_000);
    const [event] = eventsForChange(change({}, { deliveryStatus: 'SENT' }, 1, at));
    expect(event!.data.status).toBe('EXPIRED');
  });

  it('ids are deterministic per verification, sequence and type (a redelivered stream record gives the same id)', () => {
    const id = webhookEventId(SID, 4, 'verification.verified');
    expect(id).toMatch(/^EV[0-9a-f]{32}$/);
    expect(webhookEventId(SID, 4, 'verification.verified')).toBe(id);
    expect(webhookEventId(SID, 5, 'verification.verified')).not.toBe(id);
    expect(webhookEventId(SID, 4, 'verification.locked')).not.toBe(id);
    expect(eventsForChange(change({}, { status: 'VERIFIED' }, 4))[0]!.id).toBe(id);
  });
});

/** A queue that keeps what it is given. */
class MemoryQueue implements WebhookQueue {
  readonly jobs: QueuedJob[] = [];
  readonly dead: { job: WebhookJob; reason: string }[] = [];
  constructor(readonly maxDelaySeconds = 900) {}
  async enqueue(jobs: QueuedJob[]) {
    this.jobs.push(...jobs);
  }
  async deadLetter(job: WebhookJob, reason: string) {
    this.dead.push({ job, reason });
  }
}

const endpoint = (changes: Partial<WebhookEndpoint> = {}): WebhookEndpoint => ({
  sid: ENDPOINT,
  serviceSid: SERVICE,
  url: 'https://hooks.example.com/otp',
  enabled: true,
  createdAt: T0.toISOString(),
  sealedSecret: 'sealed',
  ...changes,
});

describe('publishVerificationChanges', () => {
  it('one job per event and enabled endpoint, one endpoint lookup per service, expiry timers for new ones', async () => {
    const queue = new MemoryQueue();
    const lookups: string[] = [];
    const OTHER = 'VAfedcba9876543210fedcba9876543210';
    const endpoints = {
      listEndpoints: async (serviceSid: string) => {
        lookups.push(serviceSid);
        if (serviceSid !== SERVICE) return [];
        return [
          endpoint(),
          endpoint({ sid: 'WH1', url: 'https://b.example.com' }),
          endpoint({ sid: 'WH2', enabled: false }),
        ];
      },
    };
    const result = await publishVerificationChanges({ endpoints, queue, clock: new FakeClock(T0) }, [
      change(undefined, {}),
      change({}, { deliveryStatus: 'DELIVERED' }, 1),
      change({ deliveryStatus: 'DELIVERED' }, { deliveryStatus: 'DELIVERED', status: 'VERIFIED' }, 2),
      change({}, { attemptsRemaining: 4 }),
      {
        ...change({}, { deliveryStatus: 'SENT' }),
        after: verification({ serviceSid: OTHER, deliveryStatus: 'SENT' }),
      },
    ]);
    expect(lookups.sort()).toEqual([OTHER, SERVICE].sort());
    expect(result).toEqual({ events: 2, jobs: 5 });
    const deliveries = queue.jobs.filter((queued) => queued.job.kind === 'deliver');
    expect(
      deliveries.map(({ job }) => job.kind === 'deliver' && [job.eventType, job.endpointSid, job.attempt]),
    ).toEqual([
      ['verification.delivery.delivered', ENDPOINT, 1],
      ['verification.delivery.delivered', 'WH1', 1],
      ['verification.verified', ENDPOINT, 1],
      ['verification.verified', 'WH1', 1],
    ]);
    const [expiry] = queue.jobs.filter((queued) => queued.job.kind === 'expire');
    expect(expiry).toEqual({
      job: { kind: 'expire', serviceSid: SERVICE, verificationSid: SID, expiresAt: verification().expiresAt },
      delaySeconds: 300,
    });
  });

  it("each job carries its endpoint's disable count, so a later disable can drop it", async () => {
    const queue = new MemoryQueue();
    const endpoints = [endpoint(), endpoint({ sid: 'WH1', disableCount: 2 })];
    await publishVerificationChanges(
      { endpoints: { listEndpoints: async () => endpoints }, queue, clock: new FakeClock(T0) },
      [change({}, { status: 'VERIFIED' })],
    );
    expect(
      queue.jobs.map(({ job }) => job.kind === 'deliver' && [job.endpointSid, job.endpointDisableCount]),
    ).toEqual([
      [ENDPOINT, undefined],
      ['WH1', 2],
    ]);
  });

  it('nothing is enqueued for a service without enabled endpoints', async () => {
    const queue = new MemoryQueue();
    await publishVerificationChanges(
      {
        endpoints: { listEndpoints: async () => [endpoint({ enabled: false })] },
        queue,
        clock: new FakeClock(T0),
      },
      [change(undefined, {}), change({}, { status: 'VERIFIED' })],
    );
    expect(queue.jobs).toEqual([]);
  });
});

describe('retry schedule', () => {
  it('exponential, 5 s × 4^(n-1), nine attempts spanning more than a day', () => {
    expect(RETRY_DELAYS_SECONDS).toEqual([5, 20, 80, 320, 1280, 5120, 20480, 81920]);
    for (let i = 1; i < RETRY_DELAYS_SECONDS.length; i++) {
      expect(RETRY_DELAYS_SECONDS[i]).toBe(RETRY_DELAYS_SECONDS[i - 1]! * 4);
    }
    expect(MAX_DELIVERY_ATTEMPTS).toBe(9);
    const total = RETRY_DELAYS_SECONDS.reduce((sum, delay) => sum + delay, 0);
    expect(total).toBeGreaterThan(24 * 3600);
    expect(total).toBeLessThan(31 * 3600);
    expect(retryDelaySeconds(1, 1)).toBe(5);
    expect(retryDelaySeconds(8, 1)).toBe(81920);
    expect(retryDelaySeconds(9, 1)).toBeUndefined();
    expect(retryDelaySeconds(2, 0.001)).toBeCloseTo(0.02);
  });

  it('waits longer than the queue allows hop with notBefore', () => {
    const job: WebhookJob = {
      kind: 'deliver',
      serviceSid: SERVICE,
      endpointSid: ENDPOINT,
      eventId: 'EV1',
      eventType: 'verification.verified',
      payload: '{}',
      attempt: 6,
    };
    const queue = new MemoryQueue(900);
    expect(scheduleAt(queue, job, new Date(T0.getTime() + 80_000), T0)).toEqual({ job, delaySeconds: 80 });
    const due = new Date(T0.getTime() + 5120_000);
    expect(scheduleAt(queue, job, due, T0)).toEqual({
      job: { ...job, notBefore: due.toISOString() },
      delaySeconds: 900,
    });
    // The last hop drops notBefore again.
    expect(
      scheduleAt(queue, { ...job, notBefore: due.toISOString() }, due, new Date(due.getTime() - 100_000)),
    ).toEqual({
      job,
      delaySeconds: 100,
    });
  });
});

describe('runWebhookJob', () => {
  const job: WebhookJob = {
    kind: 'deliver',
    serviceSid: SERVICE,
    endpointSid: ENDPOINT,
    eventId: 'EVabc',
    eventType: 'verification.delivery.delivered',
    payload: '{"id":"EVabc"}',
    attempt: 1,
  };

  function sender(answers: WebhookResponse[], found: WebhookEndpoint | null = endpoint()) {
    const requests: WebhookRequest[] = [];
    const queue = new MemoryQueue();
    const clock = new FakeClock(T0);
    const expired: string[] = [];
    const deps: WebhookSenderDeps = {
      endpoints: { getEndpoint: async () => found ?? undefined },
      signer: { signature: (_endpoint, content) => `v1,signed(${content})` },
      transport: {
        post: async (request) => {
          requests.push(request);
          return answers.shift() ?? { status: 200 };
        },
      },
      queue,
      store: { markExpired: async (sid) => void expired.push(sid) },
      clock,
      settings: { backoffScale: 1, timeoutMs: 5000, allowPrivateTargets: false },
    };
    return { deps, requests, queue, clock, expired };
  }

  it('posts the payload with the Standard Webhooks headers; 2xx is delivered, nothing requeued', async () => {
    const { deps, requests, queue } = sender([{ status: 204 }]);
    expect(await runWebhookJob(deps, job)).toBe('delivered');
    expect(requests).toHaveLength(1);
    const timestamp = String(T0.getTime() / 1000);
    expect(requests[0]).toMatchObject({
      url: 'https://hooks.example.com/otp',
      body: job.payload,
      timeoutMs: 5000,
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'EVabc',
        'webhook-timestamp': timestamp,
        'webhook-signature': `v1,signed(EVabc.${timestamp}.${job.payload})`,
      },
    });
    expect(queue.jobs).toEqual([]);
  });

  it.each([
    [{ status: 500 }],
    [{ status: 302 }],
    [{ status: 429 }],
    [{ error: 'no response within 5000 ms' }],
  ])('%o: retried with the next attempt after the schedule', async (answer) => {
    const { deps, queue } = sender([answer]);
    expect(await runWebhookJob(deps, job)).toBe('retrying');
    expect(queue.jobs).toEqual([{ job: { ...job, attempt: 2 }, delaySeconds: 5 }]);
  });

  it("the wait runs from the end of the failed attempt, also past the queue's longest delay", async () => {
    for (const [attempt, delay] of [
      [1, 5],
      [5, 1280],
    ] as const) {
      const { deps, queue, clock } = sender([]);
      // The attempt times out: it ends 5 s after it started.
      deps.transport = {
        post: async () => {
          clock.advance(5000);
          return { error: 'no response within 5000 ms' };
        },
      };
      expect(await runWebhookJob(deps, { ...job, attempt })).toBe('retrying');
      const due = new Date(T0.getTime() + 5000 + delay * 1000);
      expect(queue.jobs).toEqual([
        delay <= 900
          ? { job: { ...job, attempt: attempt + 1 }, delaySeconds: delay }
          : { job: { ...job, attempt: attempt + 1, notBefore: due.toISOString() }, delaySeconds: 900 },
      ]);
    }
  });

  it('the ninth failure goes to the dead-letter queue', async () => {
    const { deps, queue } = sender([{ status: 503 }]);
    expect(await runWebhookJob(deps, { ...job, attempt: 9 })).toBe('dead');
    expect(queue.jobs).toEqual([]);
    expect(queue.dead).toEqual([
      { job: { ...job, attempt: 9 }, reason: '9 attempts failed; last: HTTP 503' },
    ]);
  });

  it('records each attempt without the payload; a record that cannot be written changes nothing', async () => {
    const records: WebhookDeliveryRecord[] = [];
    const ve = `VE${'1'.repeat(32)}`;
    const withSid = { ...job, payload: JSON.stringify({ id: 'EVabc', data: { sid: ve } }) };
    const ok = sender([{ status: 500 }, { error: 'connect ECONNREFUSED 10.0.0.1:443' }]);
    ok.deps.deliveries = { record: async (record) => void records.push(record) };
    expect(await runWebhookJob(ok.deps, withSid)).toBe('retrying');
    expect(await runWebhookJob(ok.deps, { ...withSid, attempt: 9 })).toBe('dead');
    expect(records).toEqual([
      {
        serviceSid: SERVICE,
        endpointSid: ENDPOINT,
        eventId: 'EVabc',
        eventType: 'verification.delivery.delivered',
        verificationSid: ve,
        at: T0.toISOString(),
        attempt: 1,
        status: 500,
        durationMs: 0,
        delivered: false,
        final: false,
      },
      expect.objectContaining({ attempt: 9, error: 'ECONNREFUSED', delivered: false, final: true }),
    ]);
    // The address in the error's text is not kept.
    expect(JSON.stringify(records)).not.toContain('10.0.0.1');

    for (const answer of [{ status: 200 }, { status: 500 }]) {
      const failing = sender([answer]);
      failing.deps.deliveries = { record: () => Promise.reject(new Error('table unreachable')) };
      expect(await runWebhookJob(failing.deps, job)).toBe(answer.status === 200 ? 'delivered' : 'retrying');
      expect(failing.queue.jobs).toHaveLength(answer.status === 200 ? 0 : 1);
    }
  });

  it('a removed or disabled endpoint drops the job', async () => {
    for (const found of [null, endpoint({ enabled: false })]) {
      const { deps, requests, queue } = sender([], found);
      expect(await runWebhookJob(deps, job)).toBe('dropped');
      expect(requests).toEqual([]);
      expect(queue.jobs).toEqual([]);
    }
  });

  it('a job queued before a disable is dropped, even once the endpoint is enabled again', async () => {
    // Disabled once and enabled again since the job was queued (it carries the count of then: none).
    const { deps, requests, queue } = sender([], endpoint({ enabled: true, disableCount: 1 }));
    expect(await runWebhookJob(deps, { ...job, attempt: 2 })).toBe('dropped');
    expect(requests).toEqual([]);
    expect(queue.jobs).toEqual([]);
    // An event queued after the enable carries the endpoint's count: it is posted.
    expect(await runWebhookJob(deps, { ...job, endpointDisableCount: 1 })).toBe('delivered');
    expect(requests).toHaveLength(1);
  });

  it('a job that arrives before notBefore waits again', async () => {
    const { deps, requests, queue } = sender([]);
    const notBefore = new Date(T0.getTime() + 2000_000).toISOString();
    expect(await runWebhookJob(deps, { ...job, notBefore })).toBe('waiting');
    expect(requests).toEqual([]);
    expect(queue.jobs).toEqual([{ job: { ...job, notBefore }, delaySeconds: 900 }]);
  });

  describe('an endpoint that stops answering is paused on the instance', () => {
    const OTHER = `WH${'f'.repeat(32)}`;
    const timeout: WebhookResponse = { error: 'no response within 5000 ms' };
    /** A sender whose endpoints time out while `down` holds, and answer 200 otherwise; one pause set. */
    function pausing(down: (endpointSid: string) => boolean) {
      const made = sender([]);
      const records: WebhookDeliveryRecord[] = [];
      made.deps.endpoints = { getEndpoint: async (_service, sid) => endpoint({ sid }) };
      made.deps.transport = {
        post: async (request) => {
          made.requests.push(request);
          return down(request.endpointSid) ? timeout : { status: 200 };
        },
      };
      made.deps.deliveries = { record: async (record) => void records.push(record) };
      made.deps.pauses = new EndpointPauses();
      const deliver = job as Extract<WebhookJob, { kind: 'deliver' }>;
      const run = (endpointSid: string, attempt = 1) =>
        runWebhookJob(made.deps, { ...deliver, endpointSid, attempt });
      const posted = (endpointSid: string) =>
        made.requests.filter((request) => request.endpointSid === endpointSid).length;
      return { ...made, records, run, posted };
    }

    it('after its time-outs in a row its jobs fail at once, as attempts, on the retry schedule', async () => {
      const s = pausing((sid) => sid === ENDPOINT);
      for (let i = 0; i < ENDPOINT_PAUSE.timeouts; i++) expect(await s.run(ENDPOINT)).toBe('retrying');
      expect(s.posted(ENDPOINT)).toBe(ENDPOINT_PAUSE.timeouts);
      expect(await s.run(ENDPOINT, 2)).toBe('retrying');
      expect(await s.run(ENDPOINT, 9)).toBe('dead');
      // No request: the attempts failed as paused, and the retry went on its schedule.
      expect(s.posted(ENDPOINT)).toBe(ENDPOINT_PAUSE.timeouts);
      expect(s.records.slice(-2).map((r) => [r.attempt, r.error, r.final])).toEqual([
        [2, 'paused', false],
        [9, 'paused', true],
      ]);
      expect(s.queue.jobs.at(-1)).toEqual({ job: { ...job, attempt: 3 }, delaySeconds: 20 });
      expect(s.queue.dead.at(-1)?.reason).toContain('paused');
      // Another endpoint is posted to as before.
      expect(await s.run(OTHER)).toBe('delivered');
      expect(s.posted(OTHER)).toBe(1);
    });

    it('after the pause one request tries again: an answer ends the pause, a time-out starts it over', async () => {
      let down = true;
      const s = pausing(() => down);
      for (let i = 0; i < ENDPOINT_PAUSE.timeouts; i++) await s.run(ENDPOINT);
      s.clock.advance(ENDPOINT_PAUSE.pauseMs);
      await s.run(ENDPOINT);
      expect(s.posted(ENDPOINT)).toBe(ENDPOINT_PAUSE.timeouts + 1);
      await s.run(ENDPOINT);
      expect(s.posted(ENDPOINT)).toBe(ENDPOINT_PAUSE.timeouts + 1);

      s.clock.advance(ENDPOINT_PAUSE.pauseMs);
      down = false;
      expect(await s.run(ENDPOINT)).toBe('delivered');
      expect(await s.run(ENDPOINT)).toBe('delivered');
      expect(s.posted(ENDPOINT)).toBe(ENDPOINT_PAUSE.timeouts + 3);
    });

    it('only time-outs count, in a row: a refused connection or an error status costs the sender nothing', async () => {
      const answers: WebhookResponse[] = [
        timeout,
        timeout,
        { status: 503 },
        timeout,
        timeout,
        { error: 'connect ECONNREFUSED 203.0.113.9:443' },
        { error: 'connect ECONNREFUSED 203.0.113.9:443' },
        { error: 'connect ECONNREFUSED 203.0.113.9:443' },
        { status: 200 },
      ];
      const s = pausing(() => false);
      s.deps.transport = {
        post: async (request) => {
          s.requests.push(request);
          return answers.shift()!;
        },
      };
      for (let i = 0; i < 9; i++) await s.run(ENDPOINT);
      expect(s.posted(ENDPOINT)).toBe(9);
    });

    it('remembers a bounded number of endpoints, the oldest forgotten first', () => {
      const pauses = new EndpointPauses({ ...ENDPOINT_PAUSE, endpoints: 2 });
      for (const name of ['a', 'b', 'c'])
        for (let i = 0; i < ENDPOINT_PAUSE.timeouts; i++) pauses.answered(name, true, 0);
      expect(['a', 'b', 'c'].map((name) => pauses.mayPost(name, 1))).toEqual([true, false, false]);
    });
  });

  it('expiry timer: waits until expires_at, then writes EXPIRED back', async () => {
    const { deps, queue, clock, expired } = sender([]);
    const expire: WebhookJob = {
      kind: 'expire',
      serviceSid: SERVICE,
      verificationSid: SID,
      expiresAt: new Date(T0.getTime() + 200).toISOString(),
    };
    expect(await runWebhookJob(deps, expire)).toBe('waiting');
    // Never a tight loop: at least a second.
    expect(queue.jobs).toEqual([{ job: expire, delaySeconds: 1 }]);
    clock.advance(200);
    expect(await runWebhookJob(deps, expire)).toBe('expired');
    expect(expired).toEqual([SID]);
  });
});

describe('webhook URL policy', () => {
  const strict = { allowPrivate: false };
  it.each([
    'https://hooks.example.com/otp',
    'https://hooks.example.com:8443/otp?service=1',
    'https://8.8.8.8/hook',
    'https://[2606:4700::1111]/hook',
  ])('accepts %s', (url) => {
    expect(checkWebhookUrl(url, strict).ok).toBe(true);
  });

  it.each([
    ['http://hooks.example.com/otp', 'https'],
    ['ftp://hooks.example.com/', 'https'],
    ['not a url', 'not a URL'],
    ['https://user:pass@hooks.example.com/', 'credentials'],
    ['https://hooks.example.com/#x', 'fragment'],
    ['https://127.0.0.1/', 'private'],
    ['https://0x7f.1/', 'private'],
    ['https://2130706433/', 'private'],
    ['https://10.1.2.3/', 'private'],
    ['https://172.20.0.1/', 'private'],
    ['https://192.168.1.1/', 'private'],
    ['https://169.254.169.254/latest/meta-data/', 'private'],
    ['https://100.64.0.1/', 'private'],
    ['https://0.0.0.0/', 'private'],
    ['https://[::1]/', 'private'],
    ['https://[fe80::1]/', 'private'],
    ['https://[fd00:ec2::254]/', 'private'],
    ['https://[::ffff:127.0.0.1]/', 'private'],
    ['https://[::ffff:a9fe:a9fe]/', 'private'],
    // IPv6 forms of loopback and metadata addresses that the old deny-list let through.
    ['https://[::7f00:1]/', 'private'],
    ['https://[::ffff:0:7f00:1]/', 'private'],
    ['https://[64:ff9b:1::7f00:1]/', 'private'],
    ['https://[2002:a9fe:a9fe::]/', 'private'],
    ['https://[2001::a9fe:a9fe]/', 'private'],
    ['https://[fec0::1]/', 'private'],
    ['https://localhost/', 'local host'],
    ['https://api.localhost/', 'local host'],
    ['https://metadata/', 'local host'],
    ['https://db.internal/', 'local host'],
    // A fully qualified name's final dot names the same host.
    ['https://localhost./', 'local host'],
    ['https://LOCALHOST./', 'local host'],
    ['https://instance-data.ec2.internal./', 'local host'],
    ['https://metadata./', 'local host'],
    [`https://example.com/${'a'.repeat(2048)}`, 'longer'],
  ])('refuses %s (%s)', (url, reason) => {
    const result = checkWebhookUrl(url, strict);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toContain(reason);
  });

  it('the local stack allows http:// and loopback', () => {
    expect(checkWebhookUrl('http://127.0.0.1:3000/_local/webhooks/receiver', { allowPrivate: true }).ok).toBe(
      true,
    );
    expect(checkWebhookUrl('ftp://127.0.0.1/', { allowPrivate: true }).ok).toBe(false);
  });

  it.each([
    ['8.8.8.8', true],
    ['2606:4700::1111', true],
    ['172.32.0.1', true],
    ['127.0.0.53', false],
    ['10.0.0.1', false],
    ['172.31.255.255', false],
    ['169.254.0.1', false],
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['::', false],
    ['fc00::1', false],
    ['64:ff9b::10.0.0.1', false],
    ['64:ff9b::8.8.8.8', true],
    ['not-an-ip', false],
    // Global unicast, IPv4 and IPv6, also in the IPv4-mapped form.
    ['1.1.1.1', true],
    ['2001:4860:4860::8888', true],
    ['2a00:1450:4001:82a::200e', true],
    ['::ffff:8.8.8.8', true],
    ['::ffff:808:808', true],
    // The rest of IPv4's special-purpose ranges.
    ['100.64.0.1', false],
    ['192.0.0.8', false],
    ['192.0.2.1', false],
    ['192.88.99.1', false],
    ['198.18.0.1', false],
    ['198.51.100.7', false],
    ['203.0.113.9', false],
    ['240.0.0.1', false],
    // IPv4-compatible (deprecated) ::a.b.c.d, whatever it embeds: outside 2000::/3.
    ['::7f00:1', false],
    ['::127.0.0.1', false],
    ['::808:808', false],
    // SIIT ::ffff:0:a.b.c.d.
    ['::ffff:0:7f00:1', false],
    ['::ffff:0:808:808', false],
    // IPv4-mapped and well-known NAT64 are judged by the IPv4 inside, in either notation.
    ['::ffff:7f00:1', false],
    ['::ffff:169.254.169.254', false],
    ['64:ff9b::a9fe:a9fe', false],
    ['64:ff9b::808:808', true],
    // Local-use NAT64 (RFC 8215), 6to4 and Teredo are refused whatever they embed.
    ['64:ff9b:1::7f00:1', false],
    ['64:ff9b:1::808:808', false],
    ['2002:a9fe:a9fe::', false],
    ['2002:808:808::1', false],
    ['2001::a9fe:a9fe', false],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false],
    // Site-local, documentation (old and new), discard, segment routing, ORCHIDv2, unassigned space.
    ['fec0::1', false],
    ['2001:db8::1', false],
    ['3fff::1', false],
    ['100::1', false],
    ['5f00::1', false],
    ['2001:20::1', false],
    ['4000::1', false],
    ['fe80::1%eth0', false],
  ])('isPublicAddress(%s) is %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});

describe('webhook settings', () => {
  it('defaults: real schedule, 5 s per POST, public HTTPS targets only', () => {
    expect(webhookSettingsFromEnv({})).toEqual({
      backoffScale: 1,
      timeoutMs: 5000,
      allowPrivateTargets: false,
    });
  });

  it('reads and checks the environment', () => {
    expect(
      webhookSettingsFromEnv({
        OTP_WEBHOOK_BACKOFF_SCALE: '0.001',
        OTP_WEBHOOK_TIMEOUT_MS: '800',
        OTP_WEBHOOK_ALLOW_PRIVATE: 'true',
      }),
    ).toEqual({ backoffScale: 0.001, timeoutMs: 800, allowPrivateTargets: true });
    expect(() => webhookSettingsFromEnv({ OTP_WEBHOOK_BACKOFF_SCALE: '0' })).toThrow(
      'OTP_WEBHOOK_BACKOFF_SCALE',
    );
    expect(() => webhookSettingsFromEnv({ OTP_WEBHOOK_BACKOFF_SCALE: '2' })).toThrow(
      'OTP_WEBHOOK_BACKOFF_SCALE',
    );
    expect(() => webhookSettingsFromEnv({ OTP_WEBHOOK_TIMEOUT_MS: '5s' })).toThrow('OTP_WEBHOOK_TIMEOUT_MS');
    expect(() => webhookSettingsFromEnv({ OTP_WEBHOOK_ALLOW_PRIVATE: 'yes' })).toThrow(
      'OTP_WEBHOOK_ALLOW_PRIVATE',
    );
  });
});

describe('signatures (Standard Webhooks)', () => {
  const secret = newWebhookSecret();
  const body = '{"id":"EV1","type":"verification.verified"}';
  const now = new Date();
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const signed = {
    id: 'EV1',
    timestamp,
    signature: signWebhookContent(secret, `EV1.${timestamp}.${body}`),
    body,
  };

  it('secrets are whsec_ and base64 of 32 random bytes', () => {
    expect(secret.startsWith(WEBHOOK_SECRET_PREFIX)).toBe(true);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(secret);
  });

  it('verifies; fails for a changed body, another id, a wrong secret, a stale or future timestamp', () => {
    expect(verifyWebhook([secret], signed, now)).toBe(true);
    expect(verifyWebhook([secret], { ...signed, body: body.replace('verified', 'locked') }, now)).toBe(false);
    expect(verifyWebhook([secret], { ...signed, id: 'EV2' }, now)).toBe(false);
    expect(verifyWebhook([newWebhookSecret()], signed, now)).toBe(false);
    expect(verifyWebhook([secret], signed, new Date(now.getTime() + 301_000))).toBe(false);
    expect(verifyWebhook([secret], signed, new Date(now.getTime() - 301_000))).toBe(false);
    expect(verifyWebhook([secret], { ...signed, signature: undefined }, now)).toBe(false);
  });

  it('the signature is the one the Standard Webhooks scheme defines', () => {
    // Test vector from the Standard Webhooks specification's reference libraries.
    const vectorSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const content = 'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}';
    expect(signWebhookContent(vectorSecret, content)).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('a rotated endpoint signs with both secrets during the overlap, then only with the new one', () => {
    const vault = new WebhookSecretVault('master-key-for-tests');
    const [oldSecret, newSecret] = [newWebhookSecret(), newWebhookSecret()];
    const until = new Date(now.getTime() + 3600_000);
    const rotated = endpoint({
      sealedSecret: vault.seal(SERVICE, ENDPOINT, newSecret),
      previousSealedSecret: vault.seal(SERVICE, ENDPOINT, oldSecret),
      previousSecretUntil: until.toISOString(),
    });
    const signer = new EndpointSigner(vault);
    const content = `EV1.${timestamp}.${body}`;
    const during = signer.signature(rotated, content, now);
    expect(during.split(' ')).toHaveLength(2);
    for (const key of [oldSecret, newSecret]) {
      expect(verifyWebhook([key], { ...signed, signature: during }, now)).toBe(true);
    }
    const after = signer.signature(rotated, content, new Date(until.getTime() + 1));
    expect(after.split(' ')).toHaveLength(1);
    expect(verifyWebhook([oldSecret], { ...signed, signature: after }, now)).toBe(false);
  });

  it('sealed secrets open only for their own endpoint and master key', () => {
    const vault = new WebhookSecretVault('master-key-for-tests');
    const sealed = vault.seal(SERVICE, ENDPOINT, secret);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(vault.open(SERVICE, ENDPOINT, sealed)).toBe(secret);
    expect(() => vault.open(SERVICE, 'WHother', sealed)).toThrow();
    expect(() => new WebhookSecretVault('another-master-key').open(SERVICE, ENDPOINT, sealed)).toThrow();
  });
});
