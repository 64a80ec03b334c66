import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { streamImages } from '../dynamodb/stream-images';
import {
  capReachedEvent,
  conversionDropEvent,
  type GuardAlertEvent,
  type VerificationChange,
} from '../../core/webhooks/events';
import {
  publishGuardAlerts,
  publishVerificationChanges,
  type PublishResult,
  type WebhookEventsDeps,
} from '../../core/webhooks/publish';
import { capReachedFromItem, conversionDropFromItem } from '../dynamodb/guard-alerts';
import { eventMarksFromItem, verificationFromItem } from '../dynamodb/items';

/** A stream record of a verification item as a change; undefined for other items and for deletions (TTL). */
export function changeFromStreamRecord(record: DynamoDBRecord): VerificationChange | undefined {
  const images = streamImages(record);
  if (!images || images.after.type !== 'verification') return undefined;
  const { after, before } = images;
  return {
    ...(before && { before: verificationFromItem(before) }),
    after: verificationFromItem(after),
    ...eventMarksFromItem(after),
  };
}

/**
 * The alerts a guard state item holds that it did not hold before: a cap reached (`cap_reached`, a new block), a
 * conversion drop (`conversion_drop`). The guard's consumer writes each with the state, so the write is the record
 * of the event; later writes of the same alert carry the same `since`: one event each.
 */
export function guardAlertsFromStreamRecord(record: DynamoDBRecord): GuardAlertEvent[] {
  const images = streamImages(record);
  if (!images || images.after.type !== 'guard_state') return [];
  const { after, before } = images;
  const isNew = <T extends { since: number; country: string }>(
    read: (item: Record<string, unknown>) => T | undefined,
  ) => {
    const now = read(after);
    const was = before && read(before);
    return now && !(was?.since === now.since && was.country === now.country) ? now : undefined;
  };
  const reached = isNew(capReachedFromItem);
  const drop = isNew(conversionDropFromItem);
  return [...(reached ? [capReachedEvent(reached)] : []), ...(drop ? [conversionDropEvent(drop)] : [])];
}

/**
 * The events function: the table's change stream in, webhook jobs out. A failure throws, so Lambda retries the
 * batch (splitting it to isolate a bad record); jobs enqueued before the failure are enqueued again, with the
 * same event ids.
 */
export async function handleVerificationStream(
  deps: WebhookEventsDeps,
  event: DynamoDBStreamEvent,
): Promise<PublishResult> {
  const changes = event.Records.map(changeFromStreamRecord).filter(
    (change): change is VerificationChange => change !== undefined,
  );
  const alerts = event.Records.flatMap(guardAlertsFromStreamRecord);
  const published = await publishVerificationChanges(deps, changes);
  if (alerts.length === 0) return published;
  const alerted = await publishGuardAlerts(deps, alerts);
  return { events: published.events + alerted.events, jobs: published.jobs + alerted.jobs };
}
