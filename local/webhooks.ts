/**
 * Webhooks on the local stack: the same events handler fed by DynamoDB Local's change stream (StreamPoller), the
 * same sender fed by an in-process queue with the same retry schedule (shortened by OTP_WEBHOOK_BACKOFF_SCALE),
 * a log of every POST the stack made, and a receiver that checks signatures, so a developer sees events without
 * running a server: `webhook add <VA> <base>/_local/webhooks/receiver`, then `GET /_local/webhooks`.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../functions/adapters/dynamodb/client';
import { DynamoWebhookEndpoints } from '../functions/adapters/dynamodb/webhooks';
import type { Logger } from '../functions/adapters/logger';
import { HttpWebhookTransport } from '../functions/adapters/webhooks/http-transport';
import { EndpointSigner, WebhookSecretVault } from '../functions/adapters/webhooks/secrets';
import { verifyWebhook } from '../functions/adapters/webhooks/signing';
import { logJob } from '../functions/adapters/webhooks/sqs-queue';
import { handleVerificationStream } from '../functions/adapters/webhooks/stream';
import type { Clock, VerificationStore } from '../functions/core/ports';
import {
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

export const LOCAL_RECEIVER_PATH = '/_local/webhooks/receiver';

/** A message the sender kept failing on is handed back this many times, as SQS's redrive policy does. */
const MAX_RECEIVES = 5;
const RECEIVE_RETRY_MS = 1000;

/**
 * The in-process stand-in for SQS: each job runs after its delay; a job that throws comes back after a second,
 * up to MAX_RECEIVES times, then is dead-lettered. Any delay is allowed, so `notBefore` hops are never needed.
 */
export class LocalWebhookQueue implements WebhookQueue {
  readonly maxDelaySeconds = Number.POSITIVE_INFINITY;
  readonly deadLetters: { job: WebhookJob; reason: string; at: string }[] = [];
  private readonly delayed = new Map<NodeJS.Timeout, { job: WebhookJob; receives: number }>();
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly run: (job: WebhookJob) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  async enqueue(jobs: QueuedJob[]): Promise<void> {
    for (const { job, delaySeconds } of jobs) this.schedule(job, delaySeconds * 1000, 1);
  }

  async deadLetter(job: WebhookJob, reason: string): Promise<void> {
    this.deadLetters.push({ job, reason, at: new Date().toISOString() });
  }

  /** Jobs waiting for their delay. */
  get waiting(): WebhookJob[] {
    return [...this.delayed.values()].map((entry) => entry.job);
  }

  /** Runs the waiting jobs that match now, instead of after their delay (tests: expiry timers, long retries). */
  runNow(match: (job: WebhookJob) => boolean = () => true): number {
    let count = 0;
    for (const [timer, entry] of [...this.delayed]) {
      if (!match(entry.job)) continue;
      clearTimeout(timer);
      this.delayed.delete(timer);
      this.execute(entry.job, entry.receives);
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

  private schedule(job: WebhookJob, delayMs: number, receives: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.delayed.delete(timer);
      this.execute(job, receives);
    }, delayMs);
    this.delayed.set(timer, { job, receives });
  }

  private execute(job: WebhookJob, receives: number): void {
    const running: Promise<void> = this.run(job)
      .catch(async (error: unknown) => {
        this.logger.log('error', 'webhook.job_failed', { kind: job.kind, receives, error: String(error) });
        if (receives >= MAX_RECEIVES)
          await this.deadLetter(job, `the sender failed ${receives} times: ${error}`);
        else this.schedule(job, RECEIVE_RETRY_MS, receives + 1);
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
export class RecordingTransport implements WebhookTransport {
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

export interface LocalWebhooks {
  settings: WebhookSettings;
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
  );
  const sender: WebhookSenderDeps = {
    endpoints,
    signer: new EndpointSigner(vault),
    transport,
    queue,
    store: options.store,
    clock: options.clock,
    settings,
  };

  const poller = new StreamPoller({
    endpoint: options.dynamoEndpoint,
    tableName: options.tableName,
    logger: options.logger,
    handle: (event) => handleVerificationStream({ endpoints, queue, clock: options.clock }, event),
  });
  await poller.start();

  return {
    settings,
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
