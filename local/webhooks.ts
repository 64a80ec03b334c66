/**
 * Webhooks on the local stack: the same events handler fed by DynamoDB Local's change stream (StreamPoller), the
 * same sender fed by an in-process queue with the same retry schedule (shortened by OTP_WEBHOOK_BACKOFF_SCALE),
 * a log of every POST the stack made, and a receiver that checks signatures, so a developer sees events without
 * running a server: `webhook add <VA> <base>/_local/webhooks/receiver`, then `GET /_local/webhooks`.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createDocumentClient } from '../functions/adapters/dynamodb/client';
import { DynamoWebhookDeliveries, DynamoWebhookEndpoints } from '../functions/adapters/dynamodb/webhooks';
import type { Logger } from '../functions/adapters/logger';
import { HttpWebhookTransport } from '../functions/adapters/webhooks/http-transport';
import { EndpointSigner, WebhookSecretVault } from '../functions/adapters/webhooks/secrets';
import { verifyWebhook } from '../functions/adapters/webhooks/signing';
import { logJob, SQS_MAX_DELAY_SECONDS } from '../functions/adapters/webhooks/sqs-queue';
import { handleVerificationStream } from '../functions/adapters/webhooks/stream';
import { WEBHOOK_EVENTS_STREAM_FILTERS } from '../functions/adapters/dynamodb/stream-filters';
import type { Clock, VerificationStore } from '../functions/core/ports';
import {
  EndpointPauses,
  runWebhookJob,
  webhookSettingsFromEnv,
  type QueuedJob,
  type WebhookEventType,
  type WebhookJob,
  type WebhookQueue,
  type WebhookRequest,
  type WebhookResponse,
  type WebhookSenderDeps,
  type WebhookSettings,
  type WebhookTransport,
} from '../functions/core/webhooks';
import type { LocalRoute } from './server';
import { StreamPoller } from './stream-poller';

const LOCAL_RECEIVER_PATH = '/_local/webhooks/receiver';

/** A message the sender kept failing on is handed back this many times, as SQS's redrive policy does. */
const MAX_RECEIVES = 5;
const RECEIVE_RETRY_MS = 1000;

/**
 * Lambda's recursive loop detection: with `RecursiveLoop: Terminate` (Lambda's default) it stops the next
 * invocation of a chain Lambda → SQS → Lambda once about this many have run. The stack sets Allow on the sender.
 */
export const LAMBDA_RECURSION_LIMIT = 16;
type RecursiveLoop = 'Allow' | 'Terminate';
/** Local only: `Terminate` shows what Lambda's default would do to the retry schedule. */
const RECURSIVE_LOOP_ENV = 'OTP_WEBHOOK_RECURSIVE_LOOP';

function recursiveLoopFromEnv(env: Readonly<Record<string, string | undefined>>): RecursiveLoop {
  const value = env[RECURSIVE_LOOP_ENV];
  if (value === undefined || value === '' || value === 'Allow') return 'Allow';
  if (value === 'Terminate') return 'Terminate';
  throw new Error(`${RECURSIVE_LOOP_ENV} must be Allow or Terminate, got "${value}"`);
}

/** The chain a job belongs to: one delivery of one event to one endpoint, or one expiry timer. */
const jobKey = (job: WebhookJob): string =>
  job.kind === 'deliver' ? `${job.endpointSid}/${job.eventId}` : `expire/${job.verificationSid}`;

/** How many jobs' invocation counts are kept: `npm start` may run for days. */
const MAX_COUNTED_JOBS = 10_000;

interface Delayed {
  job: WebhookJob;
  /** Times the message has been handed out, counting this one (a job that threw comes back). */
  receives: number;
  /** Sender invocations before this one in the job's chain: 0 when the events function queued it. */
  chain: number;
  /** Time still to wait when this hop arrives: the message came before its due time and is queued again. */
  remainingMs: number;
}

interface LocalWebhookQueueOptions {
  /** The retry schedule's scale (OTP_WEBHOOK_BACKOFF_SCALE): SQS's 15-minute hops of a retry shrink with it. */
  backoffScale: number;
  /** What Lambda does past LAMBDA_RECURSION_LIMIT invocations of one chain; Allow, as the stack sets it. */
  recursiveLoop: RecursiveLoop;
}

/**
 * The in-process stand-in for SQS and the sender's Lambda: each job runs after its delay; a job that throws comes
 * back after a second, up to MAX_RECEIVES times, then is dead-lettered.
 *
 * It also counts what AWS would: SQS delays a message by 15 minutes at most, so on AWS a longer wait reaches the
 * sender early, every 15 minutes, and the sender queues it again (`notBefore`); every such hop and every attempt is
 * one more invocation in the same Lambda → SQS → Lambda chain. The local queue takes any delay, so the sender
 * never sees a `notBefore` here; instead the queue splits long waits into the same hops (shrunk by the backoff
 * scale for retries, so a shortened schedule makes as many invocations as the real one), counts every invocation
 * per job (`senderInvocations`), and with `recursiveLoop: 'Terminate'` stops a chain at its 17th invocation and
 * dead-letters the job, as Lambda's default loop detection would.
 */
class LocalWebhookQueue implements WebhookQueue {
  readonly maxDelaySeconds = Number.POSITIVE_INFINITY;
  readonly deadLetters: { job: WebhookJob; reason: string; at: string }[] = [];
  /** Switchable on a running stack (tests); starts as the options say. */
  recursiveLoop: RecursiveLoop;
  private readonly backoffScale: number;
  private readonly delayed = new Map<NodeJS.Timeout, Delayed>();
  private readonly running = new Set<Promise<void>>();
  private readonly invocations = new Map<string, number>();
  /** The invocation the current sender run is, in its chain: what jobs it enqueues continue from. */
  private readonly invocation = new AsyncLocalStorage<number>();
  private closed = false;

  constructor(
    private readonly run: (job: WebhookJob) => Promise<void>,
    private readonly logger: Logger,
    options: LocalWebhookQueueOptions = { backoffScale: 1, recursiveLoop: 'Allow' },
  ) {
    this.backoffScale = options.backoffScale;
    this.recursiveLoop = options.recursiveLoop;
  }

  async enqueue(jobs: QueuedJob[]): Promise<void> {
    // Queued by a sender run: the same chain, one invocation further. Otherwise (the events function) a new one.
    const chain = this.invocation.getStore() ?? 0;
    for (const { job, delaySeconds } of jobs) this.schedule(job, delaySeconds * 1000, 1, chain);
  }

  async deadLetter(job: WebhookJob, reason: string): Promise<void> {
    this.deadLetters.push({ job, reason, at: new Date().toISOString() });
  }

  /** Jobs waiting for their delay. */
  get waiting(): WebhookJob[] {
    return [...this.delayed.values()].map((entry) => entry.job);
  }

  /**
   * How many times the sender's Lambda would have been invoked for this job's chain so far on AWS: its attempts
   * (or expiry) and the 15-minute hops of its long waits.
   */
  senderInvocations(job: WebhookJob): number {
    return this.invocations.get(jobKey(job)) ?? 0;
  }

  /** Runs the waiting jobs that match now, instead of after their delay (tests: expiry timers, long retries). */
  runNow(match: (job: WebhookJob) => boolean = () => true): number {
    let count = 0;
    for (const [timer, entry] of [...this.delayed]) {
      if (!match(entry.job)) continue;
      clearTimeout(timer);
      this.delayed.delete(timer);
      this.execute(entry.job, entry.receives, entry.chain);
      count++;
    }
    return count;
  }

  /** Resolves when no job is running (delayed ones may still wait). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.delayed.keys()) clearTimeout(timer);
    this.delayed.clear();
    await this.idle();
  }

  /** The longest one message waits: SQS's limit, on the retry schedule's scale for a delivery. */
  private maxHopMs(job: WebhookJob): number {
    return SQS_MAX_DELAY_SECONDS * 1000 * (job.kind === 'deliver' ? this.backoffScale : 1);
  }

  private schedule(job: WebhookJob, delayMs: number, receives: number, chain: number): void {
    const hopMs = Math.min(delayMs, this.maxHopMs(job));
    // Sub-microsecond rests are float noise, not one more hop.
    const remainingMs = delayMs - hopMs > 1e-3 ? delayMs - hopMs : 0;
    this.arm({ job, receives, chain, remainingMs }, hopMs);
  }

  private arm(entry: Delayed, delayMs: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.delayed.delete(timer);
      this.arrive(entry);
    }, delayMs);
    this.delayed.set(timer, entry);
  }

  private arrive(entry: Delayed): void {
    if (entry.remainingMs === 0) {
      this.execute(entry.job, entry.receives, entry.chain);
      return;
    }
    // Before its due time: on AWS the sender is invoked, finds `notBefore` ahead and queues the job again.
    if (!this.invoked(entry.job, entry.chain + 1)) return;
    this.schedule(entry.job, entry.remainingMs, 1, entry.chain + 1);
  }

  /**
   * Counts invocation `n` of the job's chain; false (and the job dead-lettered) when Lambda's loop detection
   * would stop it.
   */
  private invoked(job: WebhookJob, n: number): boolean {
    if (this.recursiveLoop === 'Terminate' && n > LAMBDA_RECURSION_LIMIT) {
      this.logger.log('warn', 'webhook.recursion_stopped', { kind: job.kind, invocation: n });
      void this.deadLetter(
        job,
        `Lambda stopped a recursive loop: invocation ${n} of the chain (RecursiveLoop: Terminate, simulated)`,
      );
      return false;
    }
    const key = jobKey(job);
    this.invocations.delete(key);
    this.invocations.set(key, n);
    if (this.invocations.size > MAX_COUNTED_JOBS) {
      this.invocations.delete(this.invocations.keys().next().value!);
    }
    return true;
  }

  private execute(job: WebhookJob, receives: number, chain: number): void {
    if (!this.invoked(job, chain + 1)) return;
    const running: Promise<void> = this.invocation
      .run(chain + 1, () => this.run(job))
      .catch(async (error: unknown) => {
        this.logger.log('error', 'webhook.job_failed', { kind: job.kind, receives, error: String(error) });
        if (receives >= MAX_RECEIVES)
          await this.deadLetter(job, `the sender failed ${receives} times: ${error}`);
        // The same message handed out again: the same place in its chain, no hop.
        else this.arm({ job, receives: receives + 1, chain, remainingMs: 0 }, RECEIVE_RETRY_MS);
      })
      .finally(() => this.running.delete(running));
    this.running.add(running);
  }
}

/** One POST the local stack made, as `GET /_local/webhooks` shows it. */
export interface WebhookPost {
  eventId: string;
  eventType: WebhookEventType | undefined;
  sequence: number | undefined;
  verificationSid: string | undefined;
  serviceSid: string;
  endpointSid: string;
  url: string;
  attempt: number;
  postedAt: string;
  headers: Record<string, string>;
  /** The body as posted, parsed. */
  payload: unknown;
  /** Undefined while the POST is in flight. */
  response?: WebhookResponse;
  durationMs?: number;
  /** The local receiver's check of what it received, with the endpoint's secret; absent for other URLs. */
  signature?: 'valid' | 'invalid';
}

/** The local log keeps this many POSTs, dropping the oldest: `npm start` may run for days. */
const MAX_RECORDED_POSTS = 2000;

/** Wraps the real transport and keeps every POST, oldest first. */
class RecordingTransport implements WebhookTransport {
  readonly posts: WebhookPost[] = [];

  constructor(
    private readonly inner: WebhookTransport,
    private readonly clock: Clock,
  ) {}

  async post(request: WebhookRequest): Promise<WebhookResponse> {
    let payload: unknown;
    try {
      payload = JSON.parse(request.body);
    } catch {
      payload = request.body;
    }
    const event = payload as { type?: WebhookEventType; sequence?: number; data?: { sid?: string } };
    const post: WebhookPost = {
      eventId: request.headers['webhook-id'] ?? '',
      eventType: event.type,
      sequence: event.sequence,
      verificationSid: event.data?.sid,
      serviceSid: request.serviceSid,
      endpointSid: request.endpointSid,
      url: request.url,
      attempt: request.attempt,
      postedAt: this.clock.now().toISOString(),
      headers: request.headers,
      payload,
    };
    // Recorded before it is sent, so the receiver finds it when the request arrives.
    this.posts.push(post);
    if (this.posts.length > MAX_RECORDED_POSTS) this.posts.splice(0, this.posts.length - MAX_RECORDED_POSTS);
    const started = performance.now();
    const response = await this.inner.post(request);
    post.response = response;
    post.durationMs = Math.round(performance.now() - started);
    return response;
  }
}

export interface LocalWebhooksOptions {
  env: Readonly<Record<string, string | undefined>>;
  masterKey: string;
  dynamoEndpoint: string;
  tableName: string;
  /** The service's store: the expiry timer writes EXPIRED through it. */
  store: Pick<VerificationStore, 'markExpired'>;
  clock: Clock;
  logger: Logger;
}

/** The events handler's invocations kept, oldest dropped: `npm start` may run for days. */
const MAX_RECORDED_INVOCATIONS = 2000;

/**
 * What reached the events handler (what Lambda would have invoked the function with, after the filters), and the
 * endpoint Queries it made: tests see which writes cost an invocation.
 */
interface EventsFunctionLog {
  /** Per invocation, the `pk` of each record in its batch. */
  invocations: string[][];
  /** The service SID of each endpoint Query, in order. */
  endpointQueries: string[];
}

export interface LocalWebhooks {
  settings: WebhookSettings;
  eventsFunction: EventsFunctionLog;
  queue: LocalWebhookQueue;
  transport: RecordingTransport;
  endpoints: DynamoWebhookEndpoints;
  vault: WebhookSecretVault;
  routes: LocalRoute[];
  close(): Promise<void>;
}

export async function startLocalWebhooks(options: LocalWebhooksOptions): Promise<LocalWebhooks> {
  const settings = webhookSettingsFromEnv(options.env);
  const documents: DynamoDBDocumentClient = createDocumentClient({ endpoint: options.dynamoEndpoint });
  const endpoints = new DynamoWebhookEndpoints(documents, options.tableName);
  const vault = new WebhookSecretVault(options.masterKey);
  const transport = new RecordingTransport(
    new HttpWebhookTransport({ allowPrivateTargets: settings.allowPrivateTargets }),
    options.clock,
  );
  // The queue runs the sender and the sender enqueues retries; jobs run only after both exist.
  const queue: LocalWebhookQueue = new LocalWebhookQueue(
    async (job) => logJob(options.logger, job, await runWebhookJob(sender, job)),
    options.logger,
    { backoffScale: settings.backoffScale, recursiveLoop: recursiveLoopFromEnv(options.env) },
  );
  const sender: WebhookSenderDeps = {
    endpoints,
    signer: new EndpointSigner(vault),
    transport,
    queue,
    store: options.store,
    clock: options.clock,
    settings,
    deliveries: new DynamoWebhookDeliveries(documents, options.tableName, options.logger),
    pauses: new EndpointPauses(),
  };

  const eventsFunction: EventsFunctionLog = { invocations: [], endpointQueries: [] };
  const keep = <T>(list: T[], entry: T) => {
    list.push(entry);
    if (list.length > MAX_RECORDED_INVOCATIONS) list.shift();
  };
  const eventsDeps = {
    endpoints: {
      listEndpoints: (serviceSid: string) => {
        keep(eventsFunction.endpointQueries, serviceSid);
        return endpoints.listEndpoints(serviceSid);
      },
    },
    queue,
    clock: options.clock,
  };
  const poller = new StreamPoller({
    endpoint: options.dynamoEndpoint,
    tableName: options.tableName,
    logger: options.logger,
    // The event source's filters, as on AWS: other records never invoke the events handler.
    filters: WEBHOOK_EVENTS_STREAM_FILTERS,
    handle: (event) => {
      keep(
        eventsFunction.invocations,
        event.Records.map((record) => record.dynamodb?.Keys?.pk?.S ?? ''),
      );
      return handleVerificationStream(eventsDeps, event);
    },
  });
  await poller.start();

  return {
    settings,
    eventsFunction,
    queue,
    transport,
    endpoints,
    vault,
    routes: webhookRoutes({ transport, queue, endpoints, vault, clock: options.clock }),
    close: async () => {
      await poller.stop();
      await queue.close();
      documents.destroy();
    },
  };
}

function webhookRoutes(context: {
  transport: RecordingTransport;
  queue: LocalWebhookQueue;
  endpoints: DynamoWebhookEndpoints;
  vault: WebhookSecretVault;
  clock: Clock;
}): LocalRoute[] {
  const { transport, queue, endpoints, vault, clock } = context;
  return [
    {
      // Every POST the stack made, oldest first; ?verification=VE… &endpoint=WH… &type=… narrow it.
      method: 'GET',
      path: '/_local/webhooks',
      handle: ({ url }) => {
        const verification = url.searchParams.get('verification');
        const endpoint = url.searchParams.get('endpoint');
        const type = url.searchParams.get('type');
        return {
          status: 200,
          body: transport.posts.filter(
            (post) =>
              (!verification || post.verificationSid === verification) &&
              (!endpoint || post.endpointSid === endpoint) &&
              (!type || post.eventType === type),
          ),
        };
      },
    },
    {
      method: 'GET',
      path: '/_local/webhooks/dead-letters',
      handle: () => ({ status: 200, body: queue.deadLetters }),
    },
    {
      // A webhook endpoint for developers: checks the signature with the secret of the endpoint the stack posted
      // for, and answers 200, or `?status=NNN` (and after `?delayMs=N`) to try the retries.
      method: 'POST',
      path: LOCAL_RECEIVER_PATH,
      handle: async ({ url, headers, body }) => {
        const id = headers['webhook-id'];
        // The POST this is: same event id, sent to this receiver, not checked yet (the newest, for a retry).
        const post = [...transport.posts]
          .reverse()
          .find(
            (candidate) =>
              candidate.eventId === id &&
              candidate.signature === undefined &&
              new URL(candidate.url).pathname === LOCAL_RECEIVER_PATH,
          );
        let signatureValid = false;
        if (post) {
          const endpoint = await endpoints.getEndpoint(post.serviceSid, post.endpointSid);
          const now = clock.now();
          signatureValid =
            endpoint !== undefined &&
            verifyWebhook(
              vault.signingSecrets(endpoint, now),
              {
                id,
                timestamp: headers['webhook-timestamp'],
                signature: headers['webhook-signature'],
                body,
              },
              now,
            );
          post.signature = signatureValid ? 'valid' : 'invalid';
        }
        const delayMs = Math.min(Number(url.searchParams.get('delayMs') ?? 0) || 0, 30_000);
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
        const status = Number(url.searchParams.get('status') ?? 200);
        return {
          status: Number.isInteger(status) && status >= 200 && status <= 599 ? status : 200,
          body: { received: true, signature: signatureValid ? 'valid' : 'invalid' },
        };
      },
    },
  ];
}
