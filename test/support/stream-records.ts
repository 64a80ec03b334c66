/** The table's stream records as Lambda hands them to a function, built from plain items (tests of consumers). */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';

type Image = NonNullable<DynamoDBRecord['dynamodb']>['NewImage'];

const image = (item: Record<string, unknown>) =>
  marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: true }) as Image;

/** A record of `eventName` with the item after the change and, where given, before it. */
export const streamRecord = (
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE',
  after?: Record<string, unknown>,
  before?: Record<string, unknown>,
): DynamoDBRecord => ({
  eventName,
  dynamodb: { ...(after && { NewImage: image(after) }), ...(before && { OldImage: image(before) }) },
});
