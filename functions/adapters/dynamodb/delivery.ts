/** The delivery port on the table: channel claims and outcomes, the delivery's end, receipts, rejections. */
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DeliveryAttempt, Verification } from '../../core/model';
import type { AnsweredAttempts, DeliveryStore } from '../../core/ports';
import type { Channel } from '../../core/routing';
import { RECEIPT_FAILED_ATTRIBUTE } from '../../core/delivery-time';
import { numberTtl, rejectedAttribute } from './items';
import { keys } from './keys';
import { markedUpdate, updateIfConditionHolds } from './requests';
import {
  VERIFICATION_ATTR,
  attr,
  deliveriesEntries,
  statusWrite,
  type VerificationAttr,
} from './status-write';
import { getVerification } from './verifications';

/** Ending delivery drops the code kept for it. */
const DELIVERY_ENDED_REMOVES = ['sealedCode'] satisfies VerificationAttr[];

/** One round trip per method. */
export class DynamoDeliveryStore implements DeliveryStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  getVerification(sid: string): Promise<Verification | undefined> {
    return getVerification(this.client, this.tableName, sid);
  }

  async claimChannel(
    sid: string,
    index: number,
    claim: DeliveryAttempt,
    answered: AnsweredAttempts = {},
    channel?: Channel | null,
  ): Promise<boolean> {
    const sets = ['#deliveries.#index = :claim'];
    const values: Record<string, unknown> = { ':claim': claim, ':pending': 'PENDING' };
    if (channel !== undefined) {
      sets.push('#channel = :channel');
      values[':channel'] = channel;
    }
    // The channels before it that the workflow carried an answer for are recorded by the same write.
    const answeredNames = deliveriesEntries(answered, sets, values);
    // Marked: a claim the SDK re-sent after a lost answer, refused as the channel is claimed, is still this task's
    // (read as another's, the channel would never be sent).
    const { applied } = await markedUpdate(
      this.client,
      this.tableName,
      {
        Key: keys.verification(sid),
        UpdateExpression: `SET ${sets.join(', ')}`,
        // Only while delivery runs: a claim after the end would make an ended delivery look unsettled.
        ConditionExpression:
          'attribute_exists(pk) AND attribute_not_exists(#deliveries.#index) AND delivery_status = :pending',
        ExpressionAttributeNames: {
          '#deliveries': VERIFICATION_ATTR.deliveries,
          '#index': String(index),
          ...(channel !== undefined && { '#channel': VERIFICATION_ATTR.channel }),
          ...answeredNames,
        },
        ExpressionAttributeValues: values,
      },
      VERIFICATION_ATTR.lastClaim,
    );
    return applied;
  }

  async markReceiptFailed(sid: string, index: number, current: boolean): Promise<boolean> {
    // The channel joins a number set of its own (no write of the workflow's replaces it); the mark, a string, is
    // what the state machine compares with the channel index it formats (statemachine/delivery.asl.json).
    return updateIfConditionHolds(this.client, this.tableName, {
      Key: keys.verification(sid),
      UpdateExpression: `${current ? 'SET #failed = :mark ' : ''}ADD #failedReceipts :indexes`,
      // A repeated failure receipt is a duplicate, whatever channel was marked since.
      ConditionExpression:
        'attribute_exists(pk) AND delivery_status = :pending AND NOT contains(#failedReceipts, :index)',
      ExpressionAttributeNames: {
        ...(current && { '#failed': RECEIPT_FAILED_ATTRIBUTE }),
        '#failedReceipts': VERIFICATION_ATTR.failedReceipts,
      },
      ExpressionAttributeValues: {
        ...(current && { ':mark': String(index) }),
        ':indexes': new Set([index]),
        ':index': index,
        ':pending': 'PENDING',
      },
    });
  }

  async recordChannelOutcome(sid: string, index: number, attempt: DeliveryAttempt): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.verification(sid),
        UpdateExpression: 'SET deliveries.#index = :attempt',
        ExpressionAttributeNames: { '#index': String(index) },
        ExpressionAttributeValues: { ':attempt': attempt },
      }),
    );
  }

  async finishDelivery(
    sid: string,
    status: 'SENT' | 'FAILED',
    now: Date,
    answered: AnsweredAttempts = {},
  ): Promise<void> {
    // Refused when already ended: a receipt made it DELIVERED (and dropped the code), or this task ran twice.
    await updateIfConditionHolds(this.client, this.tableName, {
      Key: keys.verification(sid),
      ...statusWrite({
        set: { deliveryStatus: status },
        attempts: answered,
        remove: DELIVERY_ENDED_REMOVES,
        condition: `${attr('deliveryStatus')} = :pending`,
        values: { ':pending': 'PENDING' },
        now,
      }),
    });
  }

  async markDelivered(
    sid: string,
    channel: Channel,
    now: Date,
    answered: AnsweredAttempts = {},
  ): Promise<boolean> {
    // Marked: a receipt's write the SDK re-sent after a lost answer, refused as delivery ended, is still this
    // receipt's (read as a duplicate, the delivery would go uncounted). It shares the claims' mark: once delivered,
    // no claim can be written.
    const { applied } = await markedUpdate(
      this.client,
      this.tableName,
      {
        Key: keys.verification(sid),
        ...statusWrite({
          set: { deliveryStatus: 'DELIVERED', channel },
          attempts: answered,
          remove: DELIVERY_ENDED_REMOVES,
          // Forward only: PENDING or SENT become DELIVERED; DELIVERED stays, and FAILED is final.
          condition: `${attr('deliveryStatus')} IN (:pending, :sent)`,
          values: { ':pending': 'PENDING', ':sent': 'SENT' },
          now,
        }),
      },
      VERIFICATION_ATTR.lastClaim,
    );
    return applied;
  }

  async recordRejections(e164: string, channels: Channel[], until: Date): Promise<void> {
    const names = Object.fromEntries(channels.map((channel, i) => [`#r${i}`, rejectedAttribute(channel)]));
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.number(e164),
        // The number's item exists (the accepting send wrote its log). Its TTL is pushed past the rejections.
        UpdateExpression: `SET ${Object.keys(names)
          .map((name) => `${name} = :until`)
          .join(', ')}, #ttl = :ttl`,
        ExpressionAttributeNames: { ...names, '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':until': until.getTime(), ':ttl': numberTtl(until, {}) },
      }),
    );
  }
}
