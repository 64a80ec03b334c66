import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { streamImages } from '../dynamodb/stream-images';
import type { CapReachedChange, VerificationChange } from '../../core/webhooks/events';
import {
  publishCapsReached,
  publishVerificationChanges,
  type PublishResult,
  type WebhookEventsDeps,
} from '../../core/webhooks/publish';
import { capReachedFromItem } from '../dynamodb/guard-caps';
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
 * A guard state item whose `cap_reached` names a block that was not there before: a cap reached (written by the
 * guard's consumer with the block, so the write is the record of the event). Later writes of the same block
 * carry the same `since`: one event per cap and window.
 */
export function capReachedFromStreamRecord(record: DynamoDBRecord): CapReachedChange | undefined {
  const images = streamImages(record);
  if (!images || images.after.type !== 'guard_state') return undefined;
  const reached = capReachedFromItem(images.after);
  if (!reached) return undefined;
  const before = images.before && capReachedFromItem(images.before);
  return before?.since === reached.since && before.country === reached.country ? undefined : reached;
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
  const caps = event.Records.map(capReachedFromStreamRecord).filter(
    (change): change is CapReachedChange => change !== undefined,
  );
  const published = await publishVerificationChanges(deps, changes);
  if (caps.length === 0) return published;
  const capped = await publishCapsReached(deps, caps);
  return { events: published.events + capped.events, jobs: published.jobs + capped.jobs };
}
