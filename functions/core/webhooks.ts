/**
 * Customer webhooks (spec part 6): which changes of a verification are events, what an event carries, which
 * endpoints receive it, and the retry schedule. The events come from the table's change stream (a
 * transactional outbox: the write that changes a verification is the record of the event), so the OTP request
 * path does no extra work for them. Transport, signing keys, the queue and the stream are ports.
 */
import { createHash } from 'node:crypto';
import type { CodeStatus, DeliveryStatus, Verification } from './model';
import type { Clock, VerificationStore } from './ports';
import { settledStatus, toView, type VerificationView } from './verification';

export const WEBHOOK_EVENT_TYPES = [
  'verification.delivery.sent',
  'verification.delivery.delivered',
  'verification.delivery.failed',
  'verification.verified',
  'verification.locked',
  'verification.expired',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The JSON body of every webhook. */
export interface WebhookEvent {
  /** Same for every delivery attempt and every endpoint: consumers dedupe by it. Also the `webhook-id` header. */
  id: string;
  type: WebhookEventType;
  /** When the change happened (not when it was posted). */
  created_at: string;
  /** Increases with every event of one verification: a consumer ignores one lower than the last it applied. */
  sequence: number;
  /** The verification as fetch (spec 4.3) returned it right after the change. Never the code. */
  data: VerificationView;
}

/** One write to a verification, as the table's change stream reports it. */
export interface VerificationChange {
  /** Absent when the write created the verification. */
  before?: Verification;
  after: Verification;
  /** The verification's event counter after the write (every status-changing write adds one). */
  sequence: number;
  /** When the write was made. */
  at: Date;
}

const DELIVERY_EVENTS: Partial<Record<DeliveryStatus, WebhookEventType>> = {
  SENT: 'verification.delivery.sent',
  DELIVERED: 'verification.delivery.delivered',
  FAILED: 'verification.delivery.failed',
};

const STATUS_EVENTS: Partial<Record<CodeStatus, WebhookEventType>> = {
  VERIFIED: 'verification.verified',
  LOCKED: 'verification.locked',
  EXPIRED: 'verification.expired',
};

/**
 * Deterministic from the verification, the sequence and the type, so a stream record processed twice yields the
 * same id. `EV` and 32 hex characters, like the service's other identifiers.
 */
export function webhookEventId(verificationSid: string, sequence: number, type: WebhookEventType): string {
  const digest = createHash('sha256').update(`${verificationSid}/${sequence}/${type}`).digest('hex');
  return `EV${digest.slice(0, 32)}`;
}

/** The events of one change: `delivery_status` became SENT, DELIVERED or FAILED; `status` left PENDING. */
export function eventsForChange(change: VerificationChange): WebhookEvent[] {
  const { before, after } = change;
  if (!before) return [];
  const types: WebhookEventType[] = [];
  const delivery = before.deliveryStatus !== after.deliveryStatus && DELIVERY_EVENTS[after.deliveryStatus];
  if (delivery) types.push(delivery);
  const status = settledStatus(before) !== settledStatus(after) && STATUS_EVENTS[settledStatus(after)];
  if (status) types.push(status);
  const data = toView(after, change.at);
  return types.map((type) => ({
    id: webhookEventId(after.sid, change.sequence, type),
    type,
    created_at: change.at.toISOString(),
    sequence: change.sequence,
    data,
  }));
}

// --- endpoints ----------------------------------------------------------------------------------------------

/** A registered endpoint. The signing secrets stay sealed; only the signer opens them. */
export interface WebhookEndpoint {
  sid: string;
  serviceSid: string;
  url: string;
  enabled: boolean;
  createdAt: string;
  /** The current signing secret, encrypted. */
  sealedSecret: string;
  /** After a rotation, the previous secret also signs until `previousSecretUntil`, so receivers can switch. */
  previousSealedSecret?: string;
  previousSecretUntil?: string;
}

export const MAX_WEBHOOK_ENDPOINTS_PER_SERVICE = 10;

export interface WebhookEndpointStore {
  /** The service's endpoints, enabled or not. */
  listEndpoints(serviceSid: string): Promise<WebhookEndpoint[]>;
  getEndpoint(serviceSid: string, endpointSid: string): Promise<WebhookEndpoint | undefined>;
}

// --- queue ----------------------------------------------------------------------------------------------------

/** Work for the webhook sender, carried by a queue (SQS on AWS, in-process locally). */
export type WebhookJob =
  | {
      kind: 'deliver';
      serviceSid: string;
      endpointSid: string;
      eventId: string;
      eventType: WebhookEventType;
      /** The exact body to post and sign (the serialised WebhookEvent). */
      payload: string;
      /** 1 for the first try. */
      attempt: number;
      /** Set when the wait is longer than the queue can delay a message: not to be tried before this time. */
      notBefore?: string;
    }
  | {
      /**
       * Writes EXPIRED back when the code's lifetime ends, so `verification.expired` fires then (spec 3: "may
       * appear up to a minute after expires_at"), not only at the next check.
       */
      kind: 'expire';
      serviceSid: string;
      verificationSid: string;
      expiresAt: string;
    };

export interface QueuedJob {
  job: WebhookJob;
  /** Seconds before the job is handed to the sender; may be fractional (the local queue), SQS rounds up. */
  delaySeconds: number;
}

export interface WebhookQueue {
  /** The longest delay one message can have (SQS: 900 s); longer waits hop through `notBefore`. */
  readonly maxDelaySeconds: number;
  enqueue(jobs: QueuedJob[]): Promise<void>;
  /** Keeps a job whose retries are exhausted, for an operator (the dead-letter queue on AWS). */
  deadLetter(job: WebhookJob, reason: string): Promise<void>;
}

/** A job due at `due`: delayed as far as the queue allows, with `notBefore` when it must hop again. */
export function scheduleAt(queue: WebhookQueue, job: WebhookJob, due: Date, now: Date): QueuedJob {
  const wait = Math.max(0, (due.getTime() - now.getTime()) / 1000);
  if (job.kind === 'expire') return { job, delaySeconds: Math.min(wait, queue.maxDelaySeconds) };
  const { notBefore: _previous, ...rest } = job;
  if (wait <= queue.maxDelaySeconds) return { job: rest, delaySeconds: wait };
  return { job: { ...rest, notBefore: due.toISOString() }, delaySeconds: queue.maxDelaySeconds };
}

// --- retries --------------------------------------------------------------------------------------------------

/**
 * Exponential backoff: retry n (n = 1..8) waits 5 s × 4^(n-1) after the failed attempt: 5 s, 20 s, 80 s, 5 min 20 s,
 * 21 min 20 s, 1 h 25 min, 5 h 41 min, 22 h 45 min. Nine attempts over about 30 h 20 min, then the dead-letter
 * queue. `backoffScale` shortens the whole schedule on the local stack.
 */
export const RETRY_DELAYS_SECONDS: readonly number[] = [5, 20, 80, 320, 1280, 5120, 20480, 81920];
export const MAX_DELIVERY_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;

/** Seconds to wait after attempt `failedAttempt` failed, or undefined when it was the last. */
export function retryDelaySeconds(failedAttempt: number, backoffScale: number): number | undefined {
  const delay = RETRY_DELAYS_SECONDS[failedAttempt - 1];
  return delay === undefined ? undefined : delay * backoffScale;
}

// --- settings -------------------------------------------------------------------------------------------------

export interface WebhookSettings {
  /** Multiplies every retry delay; 1 on AWS, e.g. 0.001 on a local stack to see the whole schedule in minutes. */
  backoffScale: number;
  /** Time allowed for one POST, from connecting to the response status. */
  timeoutMs: number;
  /** http:// and private targets (the local stack only). */
  allowPrivateTargets: boolean;
}

export const DEFAULT_WEBHOOK_SETTINGS: Readonly<WebhookSettings> = Object.freeze({
  backoffScale: 1,
  timeoutMs: 5000,
  allowPrivateTargets: false,
});

export const WEBHOOK_SETTING_ENV = Object.freeze({
  backoffScale: 'OTP_WEBHOOK_BACKOFF_SCALE',
  timeoutMs: 'OTP_WEBHOOK_TIMEOUT_MS',
  allowPrivateTargets: 'OTP_WEBHOOK_ALLOW_PRIVATE',
});

export function webhookSettingsFromEnv(env: Readonly<Record<string, string | undefined>>): WebhookSettings {
  const settings = { ...DEFAULT_WEBHOOK_SETTINGS };
  const scale = env[WEBHOOK_SETTING_ENV.backoffScale];
  if (scale !== undefined && scale !== '') {
    const value = Number(scale);
    if (!Number.isFinite(value) || value <= 0 || value > 1) {
      throw new Error(`${WEBHOOK_SETTING_ENV.backoffScale} must be a number in (0, 1], got "${scale}"`);
    }
    settings.backoffScale = value;
  }
  const timeout = env[WEBHOOK_SETTING_ENV.timeoutMs];
  if (timeout !== undefined && timeout !== '') {
    const value = Number(timeout);
    if (!Number.isInteger(value) || value < 100 || value > 30_000) {
      throw new Error(
        `${WEBHOOK_SETTING_ENV.timeoutMs} must be a whole number in [100, 30000], got "${timeout}"`,
      );
    }
    settings.timeoutMs = value;
  }
  const allowPrivate = env[WEBHOOK_SETTING_ENV.allowPrivateTargets];
  if (allowPrivate !== undefined && allowPrivate !== '') {
    if (allowPrivate !== 'true' && allowPrivate !== 'false') {
      throw new Error(
        `${WEBHOOK_SETTING_ENV.allowPrivateTargets} must be true or false, got "${allowPrivate}"`,
      );
    }
    settings.allowPrivateTargets = allowPrivate === 'true';
  }
  return settings;
}

// --- the events function: changes to jobs ---------------------------------------------------------------------

export interface WebhookEventsDeps {
  endpoints: Pick<WebhookEndpointStore, 'listEndpoints'>;
  queue: WebhookQueue;
  clock: Clock;
}

export interface PublishResult {
  events: number;
  jobs: number;
}

/**
 * Turns a batch of verification changes into jobs: one delivery per event and enabled endpoint of its service,
 * and an expiry timer for each new verification of a service that has an enabled endpoint. One endpoint lookup
 * per service in the batch. Running it twice for the same changes enqueues the same event ids again, which
 * consumers dedupe (delivery is at least once).
 */
export async function publishVerificationChanges(
  deps: WebhookEventsDeps,
  changes: readonly VerificationChange[],
): Promise<PublishResult> {
  const byService = new Map<string, VerificationChange[]>();
  for (const change of changes) {
    const list = byService.get(change.after.serviceSid) ?? [];
    list.push(change);
    byService.set(change.after.serviceSid, list);
  }
  const now = deps.clock.now();
  // The services' endpoint lookups run side by side; the jobs keep the order of the changes within a service.
  const perService = await Promise.all(
    [...byService].map(async ([serviceSid, serviceChanges]) => {
      const events = serviceChanges.flatMap(eventsForChange);
      const created = serviceChanges.filter((change) => !change.before && change.after.status === 'PENDING');
      if (events.length === 0 && created.length === 0) return { events: 0, jobs: [] };
      const endpoints = (await deps.endpoints.listEndpoints(serviceSid)).filter(
        (endpoint) => endpoint.enabled,
      );
      if (endpoints.length === 0) return { events: 0, jobs: [] };
      const jobs: QueuedJob[] = [];
      for (const event of events) {
        const payload = JSON.stringify(event);
        for (const endpoint of endpoints) {
          jobs.push({
            job: {
              kind: 'deliver',
              serviceSid,
              endpointSid: endpoint.sid,
              eventId: event.id,
              eventType: event.type,
              payload,
              attempt: 1,
            },
            delaySeconds: 0,
          });
        }
      }
      for (const { after } of created) {
        const job: WebhookJob = {
          kind: 'expire',
          serviceSid,
          verificationSid: after.sid,
          expiresAt: after.expiresAt,
        };
        jobs.push(scheduleAt(deps.queue, job, new Date(after.expiresAt), now));
      }
      return { events: events.length, jobs };
    }),
  );
  const jobs = perService.flatMap((service) => service.jobs);
  const eventCount = perService.reduce((sum, service) => sum + service.events, 0);
  if (jobs.length > 0) await deps.queue.enqueue(jobs);
  return { events: eventCount, jobs: jobs.length };
}

// --- the sender: one job ----------------------------------------------------------------------------------------

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** For logs and the local stack's delivery log. */
  serviceSid: string;
  endpointSid: string;
  attempt: number;
}

/** The status of the response, or why there was none (time-out, refused connection, blocked address). */
export type WebhookResponse = { status: number } | { error: string };

export interface WebhookTransport {
  post(request: WebhookRequest): Promise<WebhookResponse>;
}

/** Signs webhook content with an endpoint's secret(s): the value of the `webhook-signature` header. */
export interface WebhookSigner {
  signature(endpoint: WebhookEndpoint, content: string, now: Date): string;
}

export interface WebhookSenderDeps {
  endpoints: Pick<WebhookEndpointStore, 'getEndpoint'>;
  signer: WebhookSigner;
  transport: WebhookTransport;
  queue: WebhookQueue;
  store: Pick<VerificationStore, 'markExpired'>;
  clock: Clock;
  settings: WebhookSettings;
}

/**
 * What became of a job: `delivered` (2xx), `retrying` (scheduled again), `dead` (retries exhausted: dead-lettered),
 * `dropped` (endpoint removed or disabled), `waiting` (not due yet: requeued), `expired` (expiry written back
 * or no longer needed).
 */
export type WebhookJobOutcome = 'delivered' | 'retrying' | 'dead' | 'dropped' | 'waiting' | 'expired';

export const WEBHOOK_USER_AGENT = 'otp-verify-webhooks/1';

/** A job that came back early waits at least a second more: never a tight loop of requeues. */
const notYet = (queued: QueuedJob): QueuedJob => ({
  ...queued,
  delaySeconds: Math.max(1, queued.delaySeconds),
});

/** Standard Webhooks: sign `${id}.${timestamp}.${body}` and send id, timestamp and signature as headers. */
export async function runWebhookJob(deps: WebhookSenderDeps, job: WebhookJob): Promise<WebhookJobOutcome> {
  const now = deps.clock.now();
  if (job.kind === 'expire') {
    const expiresAt = new Date(job.expiresAt);
    if (now < expiresAt) {
      await deps.queue.enqueue([notYet(scheduleAt(deps.queue, job, expiresAt, now))]);
      return 'waiting';
    }
    // Conditional on PENDING: a verified or locked code is left as it is.
    await deps.store.markExpired(job.verificationSid, now);
    return 'expired';
  }

  if (job.notBefore && now < new Date(job.notBefore)) {
    await deps.queue.enqueue([notYet(scheduleAt(deps.queue, job, new Date(job.notBefore), now))]);
    return 'waiting';
  }
  const endpoint = await deps.endpoints.getEndpoint(job.serviceSid, job.endpointSid);
  // Removed or disabled since the event was queued: nothing to deliver, nothing to retry.
  if (!endpoint || !endpoint.enabled) return 'dropped';

  const timestamp = String(Math.floor(now.getTime() / 1000));
  const response = await deps.transport.post({
    url: endpoint.url,
    headers: {
      'content-type': 'application/json',
      'user-agent': WEBHOOK_USER_AGENT,
      'webhook-id': job.eventId,
      'webhook-timestamp': timestamp,
      'webhook-signature': deps.signer.signature(endpoint, `${job.eventId}.${timestamp}.${job.payload}`, now),
    },
    body: job.payload,
    timeoutMs: deps.settings.timeoutMs,
    serviceSid: endpoint.serviceSid,
    endpointSid: endpoint.sid,
    attempt: job.attempt,
  });
  if ('status' in response && response.status >= 200 && response.status < 300) return 'delivered';

  const delay = retryDelaySeconds(job.attempt, deps.settings.backoffScale);
  if (delay === undefined) {
    const reason = 'status' in response ? `HTTP ${response.status}` : response.error;
    await deps.queue.deadLetter(job, `${MAX_DELIVERY_ATTEMPTS} attempts failed; last: ${reason}`);
    return 'dead';
  }
  const next: WebhookJob = { ...job, attempt: job.attempt + 1 };
  await deps.queue.enqueue([scheduleAt(deps.queue, next, new Date(now.getTime() + delay * 1000), now)]);
  return 'retrying';
}
