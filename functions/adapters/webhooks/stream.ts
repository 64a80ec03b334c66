import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import {
  publishVerificationChanges,
  type PublishResult,
  type VerificationChange,
  type WebhookEventsDeps,
} from '../../core/webhooks';
import { eventMarksFromItem, verificationFromItem } from '../dynamodb/items';

type Image = Record<string, AttributeValue>;

/** A stream record of a verification item as a change; undefined for other items and for deletions (TTL). */
export function changeFromStreamRecord(record: DynamoDBRecord): VerificationChange | undefined {
  const newImage = record.dynamodb?.NewImage as Image | undefined;
  if (record.eventName === 'REMOVE' || !newImage) return undefined;
  const after = unmarshall(newImage);
  if (after.type !== 'verification') return undefined;
  const oldImage = record.dynamodb?.OldImage as Image | undefined;
  const before = oldImage && unmarshall(oldImage);
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
