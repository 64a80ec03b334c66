/** The table's stream records as Lambda hands them to a function, built from plain items (tests of consumers). */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { Verification } from '../../functions/core/model';

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

/** A GB code sent over SMS a moment ago, still PENDING: the item the consumers' records are made of. */
export const pendingSmsVerification: Verification = {
  sid: `VE${'a'.repeat(32)}`,
  serviceSid: `VA${'b'.repeat(32)}`,
  to: '+447400123456',
  country: 'GB',
  status: 'PENDING',
  deliveryStatus: 'PENDING',
  channel: 'sms',
  price: 600,
  attemptsRemaining: 5,
  expiresAt: '2026-11-22T10:05:00.000Z',
  dateCreated: '2026-11-22T10:00:00.000Z',
  clientCode: false,
  codeHash: 'hash-of-code',
  message: 'Your code is {code}.',
  channels: ['sms'],
  deliveries: {},
};
