/**
 * Webhooks (docs/webhooks.md) on the local stack: endpoints registered with the admin command, events
 * read from DynamoDB Local's change stream by the same handler as the events function, posted by the same sender
 * as on AWS with the retry schedule shortened (OTP_WEBHOOK_BACKOFF_SCALE), and checked with the recipe in the docs.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { SQS_MAX_DELAY_SECONDS } from '../../functions/adapters/webhooks/sqs-queue';
import { MAX_DELIVERY_ATTEMPTS, RETRY_DELAYS_SECONDS, type WebhookJob } from '../../functions/core/webhooks';
import { LAMBDA_RECURSION_LIMIT, type WebhookPost } from '../../local/webhooks';
import { adminJson, runAdminCommand } from '../support/admin-cli';
import { eventually, startHarness, type Account, type Harness } from '../support/harness';

/** Retry n waits 5 s × 4^(n-1) × this: 50 µs ... 0.82 s, so the whole nine-attempt schedule takes about a second. */
const BACKOFF_SCALE = 0.00001;
/**
 * Short, so that hanging endpoints cost the tests little; not so short that a busy machine's loopback misses it (at
 * 400 ms a CI run under load timed out an answered POST, and the event went again, as at-least-once allows).
 */
const TIMEOUT_MS = 1_500;

let harness: Harness;
let counter = 0;
/** UK mobiles reach all five channels: sna, viber, whatsapp, rcs, sms (cheapest first). */
const freshMobile = () => `+447400${String(2_100_000 + ++counter).slice(1)}`;

beforeAll(async () => {
  harness = await startHarness({
    settings: { channelWaitSeconds: 1 },
    env: { OTP_WEBHOOK_BACKOFF_SCALE: String(BACKOFF_SCALE), OTP_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
  });
});
afterAll(() => harness.close());
afterEach(() => harness.stack.carrier.clearRules());

// --- helpers ---------------------------------------------------------------------------------------------------

/** The verification recipe exactly as docs/webhooks.md prints it. */
type Recipe = (secret: string, headers: Record<string, string | undefined>, rawBody: string) => unknown;
function documentedRecipe(): Recipe {
  const docs = readFileSync(join(__dirname, '..', '..', 'docs', 'webhooks.md'), 'utf8');
  const code = /### Verifying in Node\s+```js\n([\s\S]*?)```/.exec(docs)?.[1];
  if (!code) throw new Error('No verification recipe in docs/webhooks.md');
  return new Function('require', `${code}\nreturn verifyWebhook;`)(require) as Recipe;
}
const verifyWebhook = documentedRecipe();

const admin = (args: string[]) => adminJson(args, harness);

interface Endpoint {
  endpointSid: string;
  secret: string;
}
const addEndpoint = async (account: Account, url: string): Promise<Endpoint> =>
  (await admin(['webhook', 'add', account.serviceSid, url])) as unknown as Endpoint;

const receiverUrl = () => `${harness.stack.url}/_local/webhooks/receiver`;

async function posts(query: Record<string, string> = {}): Promise<WebhookPost[]> {
  const response = await fetch(`${harness.stack.url}/_local/webhooks?${new URLSearchParams(query)}`);
  return (await response.json()) as WebhookPost[];
}

/** Waits until the endpoint has a successful POST of each type given, and returns those POSTs in order. */
async function delivered(endpointSid: string, types: string[], verification: string): Promise<WebhookPost[]> {
  return eventually(async () => {
    const ok = (await posts({ endpoint: endpointSid, verification })).filter(
      (post) => post.response && 'status' in post.response && post.response.status === 200,
    );
    return types.every((type) => ok.some((post) => post.eventType === type)) ? ok : undefined;
  }, 15_000);
}

interface Received {
  headers: Record<string, string | undefined>;
  body: string;
  at: number;
  answeredAt?: number;
}

/** A customer's endpoint on loopback whose answers a test scripts: a status, or `hang` (never answers). */
class TestEndpoint {
  readonly received: Received[] = [];
  answers: (number | 'hang')[] = [];
  fallback: number | 'hang' = 200;
  private server!: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const entry: Received = {
          headers: req.headers as Record<string, string | undefined>,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        this.received.push(entry);
        const answer = this.answers.shift() ?? this.fallback;
        res.on('close', () => (entry.answeredAt = Date.now()));
        if (answer !== 'hang') res.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/otp`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Whether a request the endpoint received was still unanswered at `at` (ms, real clock). */
const heldOpenAt = (request: Received, at: number) =>
  request.at < at && (request.answeredAt ?? Infinity) > at;

const statusOf = (post: WebhookPost) =>
  post.response && 'status' in post.response ? post.response.status : 'error';

// --- the events ------------------------------------------------------------------------------------------------

describe('events of the fallback path', () => {
  it('arrive in the documented order with increasing sequence numbers, signed, carrying the fetched object, never the code', async () => {
    const account = await harness.createAccount();
    const api = harness.client(account);
    const local = await addEndpoint(account, receiverUrl());
    const own = await new TestEndpoint().start();
    const external = await addEndpoint(account, own.url);
    try {
      const to = freshMobile();
      harness.stack.carrier.setRule({ prefix: to, channels: { sna: 'silent', viber: { deliver: 100 } } });
      const sent = await api.send({ To: to });
      const sid = sent.body.sid as string;

      const [deliveredPost] = await delivered(local.endpointSid, ['verification.delivery.delivered'], sid);
      const afterDelivery = await api.fetch(sid);
      expect(afterDelivery.body).toMatchObject({ delivery_status: 'DELIVERED', channel: 'viber' });
      expect((deliveredPost!.payload as { data: unknown }).data).toEqual(afterDelivery.body);

      const code = await api.latestCode(to);
      const check = await api.check({ VerificationSid: sid, Code: code });
      expect(check.status).toBe(200);
      const events = await delivered(
        local.endpointSid,
        ['verification.delivery.delivered', 'verification.verified'],
        sid,
      );

      // The documented order (docs/webhooks.md, "Fallback"), one POST each, sequence 1 then 2.
      expect(events.map((post) => [post.eventType, post.sequence, post.attempt])).toEqual([
        ['verification.delivery.delivered', 1, 1],
        ['verification.verified', 2, 1],
      ]);
      const payloads = events.map((post) => post.payload as Record<string, unknown>);
      expect(payloads[1]!.data).toEqual(check.body);
      expect(payloads[1]!.data).toEqual((await api.fetch(sid)).body);
      for (const payload of payloads) {
        expect(Object.keys(payload)).toEqual(['id', 'type', 'created_at', 'sequence', 'data']);
        expect(payload.id).toMatch(/^EV[0-9a-f]{32}$/);
      }
      expect(Date.parse(payloads[0]!.created_at as string)).toBeLessThanOrEqual(
        Date.parse(payloads[1]!.created_at as string),
      );

      // The local receiver checked each signature with the endpoint's secret; a POST to another URL has no check.
      expect(events.map((post) => post.signature)).toEqual(['valid', 'valid']);
      const elsewhere = await posts({ endpoint: external.endpointSid, verification: sid });
      expect(elsewhere.length).toBeGreaterThan(0);
      expect(elsewhere.every((post) => !('signature' in post))).toBe(true);
      // Never the code, nor the message it was sent in.
      for (const post of await posts({ verification: sid })) {
        const body = JSON.stringify(post.payload);
        expect(body).not.toContain(code);
        expect(body).not.toContain('Your code is');
      }

      // The customer's own endpoint got the same events (same ids), verifiable with the documented recipe.
      await eventually(async () => (own.received.length >= 2 ? true : undefined));
      expect(own.received.map((request) => request.headers['webhook-id'])).toEqual(payloads.map((p) => p.id));
      for (const request of own.received) {
        const event = verifyWebhook(external.secret, request.headers, request.body) as { id: string };
        expect(event.id).toBe(request.headers['webhook-id']);
        expect(request.headers['content-type']).toBe('application/json');
        // Signed with that endpoint's own secret, not the other endpoint's.
        expect(() => verifyWebhook(local.secret, request.headers, request.body)).toThrow('signature');
      }
    } finally {
      await own.stop();
    }
  });

  it('every channel silent: delivery.sent, then a late receipt gives delivery.delivered with a higher sequence', async () => {
    const account = await harness.createAccount({ channels: ['sms', 'whatsapp'] });
    const api = harness.client(account);
    const endpoint = await addEndpoint(account, receiverUrl());
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { whatsapp: 'silent', sms: 'silent' } });
    const sid = (await api.send({ To: to })).body.sid as string;
    await delivered(endpoint.endpointSid, ['verification.delivery.sent'], sid);

    const whatsapp = harness.stack.carrier.messagesTo(to).find((message) => message.channel === 'whatsapp')!;
    const receipt = await harness.postCarrierReceipt({
      reference: whatsapp.reference,
      messageId: whatsapp.messageId!,
      status: 'delivered',
    });
    expect(receipt.status).toBe(200);
    const events = await delivered(
      endpoint.endpointSid,
      ['verification.delivery.sent', 'verification.delivery.delivered'],
      sid,
    );
    expect(events.map((post) => [post.eventType, post.sequence])).toEqual([
      ['verification.delivery.sent', 1],
      ['verification.delivery.delivered', 2],
    ]);
    expect((events[1]!.payload as { data: unknown }).data).toEqual((await api.fetch(sid)).body);
  });

  it('every channel rejects: delivery.failed', async () => {
    const account = await harness.createAccount({ channels: ['sms', 'whatsapp'] });
    const endpoint = await addEndpoint(account, receiverUrl());
    const to = freshMobile();
    harness.stack.carrier.setRule({ prefix: to, channels: { whatsapp: 'reject', sms: 'reject' } });
    const sid = (await harness.client(account).send({ To: to })).body.sid as string;
    const events = await delivered(endpoint.endpointSid, ['verification.delivery.failed'], sid);
    expect(events.map((post) => [post.eventType, post.sequence])).toEqual([
      ['verification.delivery.failed', 1],
    ]);
    expect((events[0]!.payload as { data: { delivery_status: string } }).data.delivery_status).toBe('FAILED');
  });

  it('five wrong codes: one event, verification.locked, none for the wrong codes before it', async () => {
    const account = await harness.createAccount();
    const api = harness.client(account);
    const endpoint = await addEndpoint(account, receiverUrl());
    const sid = (await api.send({ To: freshMobile() })).body.sid as string;
    await delivered(endpoint.endpointSid, ['verification.delivery.delivered'], sid);
    for (let attempt = 0; attempt < 5; attempt++) await api.check({ VerificationSid: sid, Code: 'wrong1' });
    const events = await delivered(
      endpoint.endpointSid,
      ['verification.delivery.delivered', 'verification.locked'],
      sid,
    );
    // Every check's write advances the sequence (it cannot know beforehand whether it settles the code), so
    // the sequence skips the four wrong codes: increasing, not consecutive.
    expect(events.map((post) => [post.eventType, post.sequence])).toEqual([
      ['verification.delivery.delivered', 1],
      ['verification.locked', 6],
    ]);
    expect((events[1]!.payload as { data: unknown }).data).toMatchObject({
      status: 'LOCKED',
      attempts_remaining: 0,
    });
  });
});

// --- which verifications reach the events function ---------------------------------------------------------------

describe('the events function', () => {
  const pkOf = (sid: string) => `VERIFICATION#${sid}`;
  const invokedFor = (sid: string) =>
    harness.stack.webhooks.eventsFunction.invocations.some((batch) => batch.includes(pkOf(sid)));
  const queriedFor = (serviceSid: string) =>
    harness.stack.webhooks.eventsFunction.endpointQueries.includes(serviceSid);

  /** Sends to a fresh mobile, waits for its delivery, checks the right code: the writes of a whole verification. */
  async function verifiedSend(account: Account): Promise<string> {
    const api = harness.client(account);
    const to = freshMobile();
    const sid = (await api.send({ To: to })).body.sid as string;
    await eventually(async () =>
      (await api.fetch(sid)).body.delivery_status === 'DELIVERED' ? true : undefined,
    );
    expect((await api.check({ VerificationSid: sid, Code: await api.latestCode(to) })).status).toBe(200);
    return sid;
  }

  it('is never invoked for the verifications of a service without an endpoint; one with an endpoint gets every event', async () => {
    const quiet = await harness.createAccount();
    const quietSid = await verifiedSend(quiet);

    const loud = await harness.createAccount();
    const endpoint = await addEndpoint(loud, receiverUrl());
    const loudSid = await verifiedSend(loud);
    const events = await delivered(
      endpoint.endpointSid,
      ['verification.delivery.delivered', 'verification.verified'],
      loudSid,
    );
    expect(events.map((post) => [post.eventType, post.sequence])).toEqual([
      ['verification.delivery.delivered', 1],
      ['verification.verified', 2],
    ]);
    // The loud service's later writes went through the stream after the quiet one's whole verification.
    expect(invokedFor(loudSid)).toBe(true);
    expect(queriedFor(loud.serviceSid)).toBe(true);
    expect(invokedFor(quietSid)).toBe(false);
    expect(queriedFor(quiet.serviceSid)).toBe(false);

    // An endpoint registered later gets the events of codes sent from then on, not of the earlier ones.
    const late = await addEndpoint(quiet, receiverUrl());
    const laterSid = await verifiedSend(quiet);
    await delivered(late.endpointSid, ['verification.delivery.delivered', 'verification.verified'], laterSid);
    expect(await posts({ verification: quietSid })).toEqual([]);
    expect(invokedFor(quietSid)).toBe(false);
  });

  it('after the last endpoint is removed, a verification sent before still reaches it, which queues nothing', async () => {
    const account = await harness.createAccount();
    const api = harness.client(account);
    const endpoint = await addEndpoint(account, receiverUrl());
    const to = freshMobile();
    const sid = (await api.send({ To: to })).body.sid as string;
    await delivered(endpoint.endpointSid, ['verification.delivery.delivered'], sid);
    await admin(['webhook', 'remove', account.serviceSid, endpoint.endpointSid]);

    const queries = () =>
      harness.stack.webhooks.eventsFunction.endpointQueries.filter((s) => s === account.serviceSid).length;
    const before = queries();
    expect((await api.check({ VerificationSid: sid, Code: await api.latestCode(to) })).status).toBe(200);
    // The check's write still reaches the function (the flag stays), which finds no endpoint.
    await eventually(async () => (queries() > before ? true : undefined));
    await harness.stack.webhooks.queue.idle();
    expect((await posts({ verification: sid })).map((post) => post.eventType)).toEqual([
      'verification.delivery.delivered',
    ]);
    expect(
      harness.stack.webhooks.queue.waiting.some(
        (job) => job.kind === 'deliver' && job.serviceSid === account.serviceSid,
      ),
    ).toBe(false);
  });
});

// --- delivery: retries, isolation --------------------------------------------------------------------------------

describe('delivery', () => {
  it('retries on 5xx and on a time-out, with the same event id, and stops at the first 2xx', async () => {
    const account = await harness.createAccount();
    const own = await new TestEndpoint().start();
    try {
      own.answers = [500, 'hang', 502, 204];
      const endpoint = await addEndpoint(account, own.url);
      const sid = (await harness.client(account).send({ To: freshMobile() })).body.sid as string;
      await eventually(async () => (own.received.length >= 4 ? true : undefined));
      // Well past the next delay of the schedule: nothing more comes.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(own.received).toHaveLength(4);
      expect(new Set(own.received.map((request) => request.headers['webhook-id'])).size).toBe(1);

      const attempts = await posts({ endpoint: endpoint.endpointSid, verification: sid });
      expect(attempts.map((post) => [post.attempt, statusOf(post)])).toEqual([
        [1, 500],
        [2, 'error'],
        [3, 502],
        [4, 204],
      ]);
      expect(attempts[1]!.response).toEqual({ error: `no response within ${TIMEOUT_MS} ms` });
      // Each retry is signed afresh, and verifies.
      for (const request of own.received)
        expect(verifyWebhook(endpoint.secret, request.headers, request.body)).toBeTruthy();
    } finally {
      await own.stop();
    }
  });

  it('nine failed attempts on the exponential schedule, then the dead-letter queue', async () => {
    const account = await harness.createAccount();
    const own = await new TestEndpoint().start();
    try {
      own.fallback = 503;
      const endpoint = await addEndpoint(account, own.url);
      const sid = (await harness.client(account).send({ To: freshMobile() })).body.sid as string;
      const dead = await eventually(async () => {
        const letters = (await (await fetch(`${harness.stack.url}/_local/webhooks/dead-letters`)).json()) as {
          job: { endpointSid: string; attempt: number };
          reason: string;
        }[];
        return letters.find((letter) => letter.job.endpointSid === endpoint.endpointSid);
      }, 15_000);
      expect(dead.job.attempt).toBe(MAX_DELIVERY_ATTEMPTS);
      expect(dead.reason).toBe('9 attempts failed; last: HTTP 503');
      expect(own.received).toHaveLength(MAX_DELIVERY_ATTEMPTS);
      const attempts = await posts({ endpoint: endpoint.endpointSid, verification: sid });
      expect(attempts.map((post) => post.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // The last waits are long enough to see the schedule through the scale: ~0.2 s, then ~0.82 s.
      const gaps = own.received.slice(1).map((request, i) => request.at - own.received[i]!.at);
      expect(gaps[7]).toBeGreaterThanOrEqual(RETRY_DELAYS_SECONDS[7]! * BACKOFF_SCALE * 1000 - 20);
      expect(gaps[6]).toBeGreaterThanOrEqual(RETRY_DELAYS_SECONDS[6]! * BACKOFF_SCALE * 1000 - 20);
      expect(gaps[7]!).toBeGreaterThan(gaps[6]!);
    } finally {
      await own.stop();
    }
  });

  describe("the whole schedule against Lambda's recursive loop detection", () => {
    // A stack of its own whose scale makes every wait of 20 s or more a whole number of milliseconds (d / 20 ms:
    // the longest 4.1 s, a 15-minute hop 45 ms), so no hop is lost to the millisecond clock and the count is
    // AWS's exactly. The helpers above use `harness`: it is this stack while these tests run.
    let outer: Harness;
    beforeAll(async () => {
      outer = harness;
      harness = await startHarness({
        settings: { channelWaitSeconds: 1 },
        env: { OTP_WEBHOOK_BACKOFF_SCALE: String(1 / 20_000), OTP_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
      });
    });
    afterAll(async () => {
      await harness.close();
      harness = outer;
    });

    /**
     * On AWS one failing job invokes the sender once per attempt and once per 15-minute hop of each wait longer
     * than SQS's delay limit: 9 + 1 + 5 + 22 + 91 = 128 invocations in one Lambda → SQS → Lambda chain.
     */
    const invocationsOfAFailingJob =
      MAX_DELIVERY_ATTEMPTS +
      RETRY_DELAYS_SECONDS.reduce((sum, delay) => sum + Math.ceil(delay / SQS_MAX_DELAY_SECONDS) - 1, 0);

    /** An endpoint that answers 503 to everything, its first event, and the job the queue counted for it. */
    async function failEveryAttempt() {
      const account = await harness.createAccount();
      const own = await new TestEndpoint().start();
      own.fallback = 503;
      const endpoint = await addEndpoint(account, own.url);
      const sid = (await harness.client(account).send({ To: freshMobile() })).body.sid as string;
      const dead = await eventually(async () => {
        const letters = (await (await fetch(`${harness.stack.url}/_local/webhooks/dead-letters`)).json()) as {
          job: WebhookJob & { kind: 'deliver' };
          reason: string;
        }[];
        return letters.find(
          (letter) => letter.job.kind === 'deliver' && letter.job.endpointSid === endpoint.endpointSid,
        );
      }, 15_000);
      const attempts = (await posts({ endpoint: endpoint.endpointSid, verification: sid })).map(
        (post) => post.attempt,
      );
      await own.stop();
      return { dead, attempts, invocations: harness.stack.webhooks.queue.senderInvocations(dead.job) };
    }

    it('with the loop allowed (the stack sets Allow on the sender), all 9 attempts run, in 128 invocations of one chain', async () => {
      expect(harness.stack.webhooks.queue.recursiveLoop).toBe('Allow');
      const { dead, attempts, invocations } = await failEveryAttempt();
      expect(attempts).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(dead.reason).toBe('9 attempts failed; last: HTTP 503');
      expect(invocations).toBe(invocationsOfAFailingJob);
      expect(invocations).toBeGreaterThan(LAMBDA_RECURSION_LIMIT);
    });

    it("with Lambda's default (Terminate), the chain is cut at its 17th invocation: attempts 8 and 9 never run", async () => {
      harness.stack.webhooks.queue.recursiveLoop = 'Terminate';
      try {
        const { dead, attempts, invocations } = await failEveryAttempt();
        // Invocations 1-5 are attempts 1-5, 6 a hop, 7 attempt 6, 8-12 hops, 13 attempt 7, 14-16 hops: the
        // 17th, about 3 hours in on AWS, is stopped.
        expect(attempts).toEqual([1, 2, 3, 4, 5, 6, 7]);
        expect(invocations).toBe(LAMBDA_RECURSION_LIMIT);
        expect(dead.job.attempt).toBe(8);
        expect(dead.reason).toContain('Lambda stopped a recursive loop: invocation 17');
      } finally {
        harness.stack.webhooks.queue.recursiveLoop = 'Allow';
      }
    });
  });

  it('an endpoint that hangs slows neither the sends of its service nor the webhooks of another service', async () => {
    const quiet = harness.client(await harness.createAccount());
    const timeSends = async (api: typeof quiet, count: number) => {
      const durations: number[] = [];
      for (let i = 0; i < count; i++) {
        const started = performance.now();
        expect((await api.send({ To: freshMobile() })).status).toBe(201);
        durations.push(performance.now() - started);
      }
      return durations;
    };
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const baseline = await timeSends(quiet, 5);

    const hanging = await new TestEndpoint().start();
    hanging.fallback = 'hang';
    const slowAccount = await harness.createAccount();
    const slow = await addEndpoint(slowAccount, hanging.url);
    const otherAccount = await harness.createAccount();
    const prompt = await new TestEndpoint().start();
    await addEndpoint(otherAccount, prompt.url);
    try {
      const api = harness.client(slowAccount);
      // Get webhooks hanging first, then send while they hang.
      await api.send({ To: freshMobile() });
      await eventually(async () => (hanging.received.length > 0 ? true : undefined));
      const sendsStarted = Date.now();
      const durations = await timeSends(api, 5);
      const sendsEnded = Date.now();
      // Waiting for the hanging POSTs would add the time limit to every send; they take what sends always take (a
      // busy CI machine slowed them by 180 ms).
      expect(median(durations)).toBeLessThan(median(baseline) + TIMEOUT_MS);
      // Sends completed while the hanging endpoint held requests open.
      expect(
        hanging.received.some(
          (request) => request.at < sendsEnded && (request.answeredAt ?? Infinity) > sendsStarted,
        ),
      ).toBe(true);

      // Another service's endpoint gets its event while the hanging endpoint still holds requests open, not behind
      // them: a sender that waited for the hanging POSTs would post it only once none of them was open. (Both
      // times are the endpoints' own, on the real clock: the stack's clock, which dates the POST log, stands still.)
      await harness.client(otherAccount).send({ To: freshMobile() });
      const [event] = await eventually(async () =>
        prompt.received.length > 0 ? prompt.received : undefined,
      );
      expect(hanging.received.some((request) => heldOpenAt(request, event!.at))).toBe(true);
    } finally {
      // Removing the endpoint drops its queued retries.
      await admin(['webhook', 'remove', slowAccount.serviceSid, slow.endpointSid]);
      await hanging.stop();
      await prompt.stop();
    }
  });
});

// --- registration ------------------------------------------------------------------------------------------------

describe('endpoints', () => {
  it('disabled endpoints get nothing, enabled ones get events again; service show lists them', async () => {
    const account = await harness.createAccount();
    const api = harness.client(account);
    const endpoint = await addEndpoint(account, receiverUrl());
    // A second, always-enabled endpoint shows when an event has been processed (the stream is asynchronous).
    const witness = await addEndpoint(account, receiverUrl());
    expect(await admin(['service', 'show', account.serviceSid])).toMatchObject({
      webhookEndpoints: expect.arrayContaining([endpoint.endpointSid, witness.endpointSid]),
    });
    expect(await admin(['webhook', 'disable', account.serviceSid, endpoint.endpointSid])).toMatchObject({
      enabled: false,
      changed: true,
    });
    const quietSid = (await api.send({ To: freshMobile() })).body.sid as string;
    await delivered(witness.endpointSid, ['verification.delivery.delivered'], quietSid);
    expect(await posts({ endpoint: endpoint.endpointSid, verification: quietSid })).toEqual([]);
    expect((await admin(['webhook', 'list', account.serviceSid])).endpoints).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ endpointSid: endpoint.endpointSid, enabled: false, url: receiverUrl() }),
      ]),
    );

    await admin(['webhook', 'enable', account.serviceSid, endpoint.endpointSid]);
    const sid = (await api.send({ To: freshMobile() })).body.sid as string;
    await delivered(endpoint.endpointSid, ['verification.delivery.delivered'], sid);
    expect(await posts({ endpoint: endpoint.endpointSid, verification: quietSid })).toEqual([]);
  });

  it('a retry queued before a disable is dropped even if the endpoint is enabled again before it is due', async () => {
    const account = await harness.createAccount();
    const api = harness.client(account);
    const own = await new TestEndpoint().start();
    try {
      const endpoint = await addEndpoint(account, own.url);
      // The first attempt hangs until the time limit; the endpoint is disabled and enabled again meanwhile.
      own.answers = ['hang'];
      const oldSid = (await api.send({ To: freshMobile() })).body.sid as string;
      await eventually(async () => (own.received.length > 0 ? true : undefined));
      await admin(['webhook', 'disable', account.serviceSid, endpoint.endpointSid]);
      await admin(['webhook', 'enable', account.serviceSid, endpoint.endpointSid]);
      const [first] = await eventually(async () => {
        const made = await posts({ endpoint: endpoint.endpointSid, verification: oldSid });
        return made.every((post) => post.response) ? made : undefined;
      }, 10_000);
      expect(first!.response).toEqual({ error: expect.stringContaining('no response') });

      // The next event is posted (and, the queue being in order, after the old retry would have been).
      const newSid = (await api.send({ To: freshMobile() })).body.sid as string;
      await delivered(endpoint.endpointSid, ['verification.delivery.delivered'], newSid);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(
        (await posts({ endpoint: endpoint.endpointSid, verification: oldSid })).map((p) => p.attempt),
      ).toEqual([1]);
      expect(own.received.map((request) => JSON.parse(request.body).data.sid)).toEqual([oldSid, newSid]);
    } finally {
      await own.stop();
    }
  });

  it('a rotated secret signs beside the old one for 24 hours; both verify with the recipe', async () => {
    const account = await harness.createAccount();
    const own = await new TestEndpoint().start();
    try {
      const endpoint = await addEndpoint(account, own.url);
      const rotated = (await admin(['webhook', 'rotate', account.serviceSid, endpoint.endpointSid])) as {
        secret: string;
        previousSecretUntil: string;
      };
      expect(rotated.secret).toMatch(/^whsec_/);
      expect(rotated.secret).not.toBe(endpoint.secret);
      expect(Date.parse(rotated.previousSecretUntil) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
      await harness.client(account).send({ To: freshMobile() });
      await eventually(async () => (own.received.length > 0 ? true : undefined));
      const [request] = own.received;
      expect(request!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
      for (const secret of [rotated.secret, endpoint.secret]) {
        expect(verifyWebhook(secret, request!.headers, request!.body)).toBeTruthy();
      }
    } finally {
      await own.stop();
    }
  });

  it('webhook rotate --now cuts the previous secrets off: a retry already queued is signed with the new one only', async () => {
    const account = await harness.createAccount();
    const own = await new TestEndpoint().start();
    try {
      const endpoint = await addEndpoint(account, own.url);
      // A rotation still in its 24-hour overlap: --now ends that overlap too.
      const overlapping = (await admin(['webhook', 'rotate', account.serviceSid, endpoint.endpointSid])) as {
        secret: string;
      };
      // The first attempt hangs (until the 400 ms time limit); the secret is cut off while it does.
      own.answers = ['hang'];
      await harness.client(account).send({ To: freshMobile() });
      await eventually(async () => (own.received.length > 0 ? true : undefined));
      const cut = (await admin(['webhook', 'rotate', account.serviceSid, endpoint.endpointSid, '--now'])) as {
        secret: string;
        previousSecretUntil: string | null;
      };
      expect(cut.previousSecretUntil).toBeNull();
      await eventually(async () => (own.received.length > 1 ? true : undefined));

      const [before, after] = own.received;
      // Signed before the cut: the two secrets of the overlap.
      expect(before!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
      expect(verifyWebhook(endpoint.secret, before!.headers, before!.body)).toBeTruthy();
      // The retry, after the cut: one signature, by the new secret; neither older secret verifies it.
      expect(after!.headers['webhook-id']).toBe(before!.headers['webhook-id']);
      expect(after!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
      expect(verifyWebhook(cut.secret, after!.headers, after!.body)).toBeTruthy();
      for (const old of [endpoint.secret, overlapping.secret]) {
        expect(() => verifyWebhook(old, after!.headers, after!.body)).toThrow('signature');
      }
      expect((await admin(['webhook', 'list', account.serviceSid])).endpoints).toEqual([
        expect.objectContaining({ endpointSid: endpoint.endpointSid, previousSecretUntil: null }),
      ]);
    } finally {
      await own.stop();
    }
  });

  it('the documented recipe refuses a changed body, a wrong secret and a stale timestamp', async () => {
    const account = await harness.createAccount();
    const own = await new TestEndpoint().start();
    try {
      const endpoint = await addEndpoint(account, own.url);
      await harness.client(account).send({ To: freshMobile() });
      await eventually(async () => (own.received.length > 0 ? true : undefined));
      const { headers, body } = own.received[0]!;
      expect(verifyWebhook(endpoint.secret, headers, body)).toMatchObject({
        type: 'verification.delivery.delivered',
      });
      expect(() => verifyWebhook(endpoint.secret, headers, body.replace('DELIVERED', 'FAILED'))).toThrow(
        'signature',
      );
      const other = (await addEndpoint(account, own.url)).secret;
      expect(() => verifyWebhook(other, headers, body)).toThrow('signature');
      const stale = { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 301) };
      expect(() => verifyWebhook(endpoint.secret, stale, body)).toThrow('stale');
    } finally {
      await own.stop();
    }
  });

  it('webhook add refuses http:// and private URLs for a deployed table, before touching AWS', async () => {
    const VA = `VA${'a'.repeat(32)}`;
    for (const url of [
      'http://hooks.example.com/otp',
      'https://169.254.169.254/latest',
      'https://localhost/x',
    ]) {
      const run = await runAdminCommand(
        ['webhook', 'add', VA, url, '--table', 'OtpVerify-Table', '--region', 'eu-west-1'],
        undefined,
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('cannot be a webhook URL');
    }
  });

  it('at most ten endpoints per service; removing one makes room', async () => {
    const account = await harness.createAccount();
    const added: Endpoint[] = [];
    for (let i = 0; i < 10; i++) added.push(await addEndpoint(account, `${receiverUrl()}?n=${i}`));
    const run = await runAdminCommand(['webhook', 'add', account.serviceSid, receiverUrl()], harness);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('already has 10 webhook endpoints');
    await admin(['webhook', 'remove', account.serviceSid, added[0]!.endpointSid]);
    await addEndpoint(account, receiverUrl());
    expect(((await admin(['service', 'show', account.serviceSid])).webhookEndpoints as string[]).length).toBe(
      10,
    );
  });
});

// --- expiry (last: it moves the stack's clock) -------------------------------------------------------------------

describe('expiry', () => {
  afterAll(() => harness.clock.set(new Date()));

  it('the expiry timer writes EXPIRED back at expires_at and fires verification.expired; with no enabled endpoint at send time, the next check does', async () => {
    const account = await harness.createAccount();
    const api = harness.client(account);
    const lateAccount = await harness.createAccount();
    const lateApi = harness.client(lateAccount);
    const endpoint = await addEndpoint(account, receiverUrl());
    // Registered but disabled when this one is sent: its events will reach the function, but no timer is queued.
    const late = await addEndpoint(lateAccount, receiverUrl());
    await admin(['webhook', 'disable', lateAccount.serviceSid, late.endpointSid]);
    const lateSid = (await lateApi.send({ To: freshMobile() })).body.sid as string;
    const sid = (await api.send({ To: freshMobile() })).body.sid as string;
    await delivered(endpoint.endpointSid, ['verification.delivery.delivered'], sid);
    // Receipts are signed with the real time: let both deliveries end before the clock moves.
    await eventually(async () =>
      (await lateApi.fetch(lateSid)).body.delivery_status === 'DELIVERED' ? true : undefined,
    );
    const timer = (job: { kind: string; verificationSid?: string }) =>
      job.kind === 'expire' && job.verificationSid === sid;
    await eventually(async () => (harness.stack.webhooks.queue.waiting.some(timer) ? true : undefined));
    expect(
      harness.stack.webhooks.queue.waiting.some(
        (job) => job.kind === 'expire' && job.verificationSid === lateSid,
      ),
    ).toBe(false);

    // Five minutes pass; the timer's delay (on the real clock) is cut short.
    harness.clock.advance(301_000);
    expect(harness.stack.webhooks.queue.runNow(timer)).toBe(1);
    const events = await delivered(
      endpoint.endpointSid,
      ['verification.delivery.delivered', 'verification.expired'],
      sid,
    );
    expect(events.map((post) => [post.eventType, post.sequence])).toEqual([
      ['verification.delivery.delivered', 1],
      ['verification.expired', 2],
    ]);
    const fetched = (await api.fetch(sid)).body;
    expect(fetched.status).toBe('EXPIRED');
    expect((events[1]!.payload as { data: unknown }).data).toEqual(fetched);

    await admin(['webhook', 'enable', lateAccount.serviceSid, late.endpointSid]);
    expect((await lateApi.check({ VerificationSid: lateSid, Code: '123456' })).body.status).toBe('EXPIRED');
    const lateEvents = await delivered(late.endpointSid, ['verification.expired'], lateSid);
    expect(lateEvents.map((post) => [post.eventType, post.sequence])).toEqual([['verification.expired', 2]]);
  });
});
