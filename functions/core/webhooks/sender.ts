import type { Clock, VerificationStore } from '../ports';
import { PAUSED_ERROR, verificationSidOf, webhookErrorKind, type WebhookDeliveryLog } from './deliveries';
import type { WebhookEndpoint, WebhookEndpointStore } from './endpoints';
import { scheduleAt, type QueuedJob, type WebhookJob, type WebhookQueue } from './queue';
import { MAX_DELIVERY_ATTEMPTS, retryDelaySeconds } from './retries';
import type { WebhookSettings } from './settings';

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
  /** Keeps each attempt's outcome for the console; its failure never fails or retries a delivery. */
  deliveries?: WebhookDeliveryLog;
  /** Endpoints this instance stopped waiting for (built once per instance: it remembers across batches). */
  pauses?: EndpointPauses;
}

/**
 * When an endpoint is paused: after `timeouts` time-outs in a row on one sender instance, its jobs there fail at
 * once for `pauseMs`, then one request tries again. At most `endpoints` are remembered.
 */
export const ENDPOINT_PAUSE = { timeouts: 3, pauseMs: 30_000, endpoints: 1_000 } as const;

/**
 * Endpoints that stopped answering, per sender instance. Only time-outs count: a refused connection or an error
 * status costs the sender nothing, but each time-out holds an instance for the whole limit, and the jobs of one
 * service whose endpoints are down (with their retries) would fill the sender's ceiling and hold up every other
 * service's webhooks. A paused job is an attempt failed: it follows the retry schedule as a time-out would, whose
 * later attempts come long after the pause.
 */
export class EndpointPauses {
  /** By `serviceSid/endpointSid`, oldest first (a Map keeps insertion order). */
  private readonly endpoints = new Map<string, { timeouts: number; pausedUntil: number }>();

  constructor(private readonly rule: Record<keyof typeof ENDPOINT_PAUSE, number> = ENDPOINT_PAUSE) {}

  /** Whether to POST now. A pause over lets one request through, and holds the others back until it answers. */
  mayPost(endpoint: string, now: number): boolean {
    const known = this.endpoints.get(endpoint);
    if (!known || known.timeouts < this.rule.timeouts) return true;
    if (now < known.pausedUntil) return false;
    known.pausedUntil = now + this.rule.pauseMs;
    return true;
  }

  /** What a request to the endpoint came to: a time-out, or anything else (an answer of any status, an error). */
  answered(endpoint: string, timedOut: boolean, now: number): void {
    if (!timedOut) {
      this.endpoints.delete(endpoint);
      return;
    }
    const known = this.endpoints.get(endpoint) ?? { timeouts: 0, pausedUntil: 0 };
    known.timeouts += 1;
    if (known.timeouts >= this.rule.timeouts) known.pausedUntil = now + this.rule.pauseMs;
    this.endpoints.delete(endpoint);
    this.endpoints.set(endpoint, known);
    if (this.endpoints.size > this.rule.endpoints) {
      const oldest = this.endpoints.keys().next().value;
      if (oldest !== undefined) this.endpoints.delete(oldest);
    }
  }
}

/**
 * What became of a job: `delivered` (2xx), `retrying` (scheduled again), `dead` (retries exhausted: dead-lettered),
 * `dropped` (endpoint removed or disabled), `waiting` (not due yet: requeued), `expired` (expiry written back
 * or no longer needed).
 */
export type WebhookJobOutcome = 'delivered' | 'retrying' | 'dead' | 'dropped' | 'waiting' | 'expired';

const WEBHOOK_USER_AGENT = 'otp-verify-webhooks/1';

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
  // Removed or disabled since the event was queued, even if enabled again since: nothing to deliver or retry.
  if (!endpoint || !endpoint.enabled) return 'dropped';
  if ((endpoint.disableCount ?? 0) !== (job.endpointDisableCount ?? 0)) return 'dropped';

  const timestamp = String(Math.floor(now.getTime() / 1000));
  const pauseKey = `${endpoint.serviceSid}/${endpoint.sid}`;
  const paused = deps.pauses?.mayPost(pauseKey, now.getTime()) === false;
  const response: WebhookResponse = paused
    ? { error: PAUSED_ERROR }
    : await post(deps, endpoint, job, timestamp, now);
  const ended = deps.clock.now();
  if (!paused) {
    const timedOut = 'error' in response && webhookErrorKind(response.error) === 'timeout';
    deps.pauses?.answered(pauseKey, timedOut, ended.getTime());
  }
  const delivered = 'status' in response && response.status >= 200 && response.status < 300;
  const delay = delivered ? undefined : retryDelaySeconds(job.attempt, deps.settings.backoffScale);
  if (deps.deliveries) {
    const verificationSid = verificationSidOf(job.payload);
    await deps.deliveries
      .record({
        serviceSid: endpoint.serviceSid,
        endpointSid: endpoint.sid,
        eventId: job.eventId,
        eventType: job.eventType,
        ...(verificationSid && { verificationSid }),
        at: now.toISOString(),
        attempt: job.attempt,
        ...('status' in response ? { status: response.status } : { error: webhookErrorKind(response.error) }),
        durationMs: Math.max(0, ended.getTime() - now.getTime()),
        delivered,
        final: !delivered && delay === undefined,
      })
      // The log is told never to throw; a delivery does not depend on it even if it does.
      .catch(() => undefined);
  }
  if (delivered) return 'delivered';

  if (delay === undefined) {
    const reason = 'status' in response ? `HTTP ${response.status}` : response.error;
    await deps.queue.deadLetter(job, `${MAX_DELIVERY_ATTEMPTS} attempts failed; last: ${reason}`);
    return 'dead';
  }
  const next: WebhookJob = { ...job, attempt: job.attempt + 1 };
  // From the end of the attempt (docs/webhooks.md): a time-out adds its seconds, also to a wait that hops.
  await deps.queue.enqueue([scheduleAt(deps.queue, next, new Date(ended.getTime() + delay * 1000), ended)]);
  return 'retrying';
}

/** One signed POST of the job's event to the endpoint. */
function post(
  deps: WebhookSenderDeps,
  endpoint: WebhookEndpoint,
  job: Extract<WebhookJob, { kind: 'deliver' }>,
  timestamp: string,
  now: Date,
): Promise<WebhookResponse> {
  return deps.transport.post({
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
}
