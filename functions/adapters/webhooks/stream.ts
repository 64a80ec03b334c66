import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { streamImages } from '../dynamodb/stream-images';
import type { VerificationChange } from '../../core/webhooks/events';
import {
  publishVerificationChanges,
  type PublishResult,
  type WebhookEventsDeps,
} from '../../core/webhooks/publish';
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
 * The events function: the table's change stream in, webhook jobs out. A failure throws, so Lambda retries the
 * batch (splitting it to isolate a bad record); jobs enqueued before the failure are enqueued again, with the
 * same event ids.
 */
export function handleVerificationStream(
  deps: WebhookEventsDeps,
  event: DynamoDBStreamEvent,
): Promise<PublishResult> {
  const changes = event.Records.map(changeFromStreamRecord).filter(
    (change): change is VerificationChange => change !== undefined,
  );
  return publishVerificationChanges(deps, changes);
}
