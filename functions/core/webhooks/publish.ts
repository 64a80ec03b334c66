import type { Clock } from '../ports';
import type { WebhookEndpoint, WebhookEndpointStore } from './endpoints';
import {
  eventsForChange,
  type GuardAlertEvent,
  type VerificationChange,
  type WebhookEventType,
} from './events';
import { scheduleAt, type QueuedJob, type WebhookJob, type WebhookQueue } from './queue';

/** An event's first delivery to one endpoint, sent at once. */
const firstAttempt = (
  serviceSid: string,
  endpoint: WebhookEndpoint,
  event: { id: string; type: WebhookEventType },
  payload: string,
): QueuedJob => ({
  job: {
    kind: 'deliver',
    serviceSid,
    endpointSid: endpoint.sid,
    eventId: event.id,
    eventType: event.type,
    payload,
    attempt: 1,
    ...(endpoint.disableCount && { endpointDisableCount: endpoint.disableCount }),
  },
  delaySeconds: 0,
});

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
          jobs.push(firstAttempt(serviceSid, endpoint, event, payload));
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

/**
 * Queues the guard's alerts (`guard.cap_reached`, `guard.conversion_drop`, found on the stream) as one delivery per
 * enabled endpoint of their service. Running it twice enqueues the same event ids again (consumers dedupe).
 */
export async function publishGuardAlerts(
  deps: Pick<WebhookEventsDeps, 'endpoints' | 'queue'>,
  alerts: readonly GuardAlertEvent[],
): Promise<PublishResult> {
  const jobs: QueuedJob[] = [];
  const services = [...new Set(alerts.map((alert) => alert.data.service_sid))];
  const endpoints = new Map(
    await Promise.all(
      services.map(
        async (sid) =>
          [sid, (await deps.endpoints.listEndpoints(sid)).filter((endpoint) => endpoint.enabled)] as const,
      ),
    ),
  );
  let events = 0;
  for (const alert of alerts) {
    const serviceSid = alert.data.service_sid;
    const targets = endpoints.get(serviceSid) ?? [];
    if (targets.length === 0) continue;
    const payload = JSON.stringify(alert);
    events += 1;
    for (const endpoint of targets) jobs.push(firstAttempt(serviceSid, endpoint, alert, payload));
  }
  if (jobs.length > 0) await deps.queue.enqueue(jobs);
  return { events, jobs: jobs.length };
}
