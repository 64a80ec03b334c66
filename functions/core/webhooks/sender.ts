import type { Clock, VerificationStore } from '../ports';
import { verificationSidOf, webhookErrorKind, type WebhookDeliveryLog } from './deliveries';
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
        durationMs: Math.max(0, deps.clock.now().getTime() - now.getTime()),
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
  await deps.queue.enqueue([scheduleAt(deps.queue, next, new Date(now.getTime() + delay * 1000), now)]);
  return 'retrying';
}
