/**
 * A table stream record's item images as plain objects: what the stream consumers (webhook events, the guard's
 * signals) read. Deletions (TTL) and records without a new image carry nothing for them.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';

type Image = Record<string, AttributeValue>;

export function streamImages(
  record: DynamoDBRecord,
): { after: Record<string, unknown>; before?: Record<string, unknown> } | undefined {
  const newImage = record.dynamodb?.NewImage as Image | undefined;
  if (record.eventName === 'REMOVE' || !newImage) return undefined;
  const oldImage = record.dynamodb?.OldImage as Image | undefined;
  return { after: unmarshall(newImage), ...(oldImage && { before: unmarshall(oldImage) }) };
}
