/**
 * Every status-changing write marks the webhook event (`SET event_at = :now`, `ADD event_seq :one`), built once
 * by `statusWrite`; and DynamoStore's status writes all carry the marks (checked on the commands it sends).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { attr, statusWrite, VERIFICATION_ATTR } from '../../functions/adapters/dynamodb/status-write';
import { DynamoStore } from '../../functions/adapters/dynamodb/store';

const NOW = new Date('2026-11-21T12:00:00.000Z');

describe('statusWrite', () => {
  it('adds the event marks to the status change, naming only the attributes used', () => {
    expect(
      statusWrite({
        set: { deliveryStatus: 'DELIVERED', channel: 'sna' },
        remove: ['sealedCode'],
        condition: `${attr('deliveryStatus')} IN (:pending, :sent)`,
        values: { ':pending': 'PENDING', ':sent': 'SENT' },
        now: NOW,
      }),
    ).toEqual({
      UpdateExpression:
        'SET #delivery_status = :set_deliveryStatus, #channel = :set_channel, #event_at = :now REMOVE #sealed_code ADD #event_seq :one',
      ConditionExpression: '#delivery_status IN (:pending, :sent)',
      ExpressionAttributeNames: {
        '#delivery_status': 'delivery_status',
        '#channel': 'channel',
        '#event_at': 'event_at',
        '#sealed_code': 'sealed_code',
        '#event_seq': 'event_seq',
      },
      ExpressionAttributeValues: {
        ':now': NOW.toISOString(),
        ':one': 1,
        ':pending': 'PENDING',
        ':sent': 'SENT',
        ':set_deliveryStatus': 'DELIVERED',
        ':set_channel': 'sna',
      },
    });
  });

  it('lowers a counter with the same :one, and lets the condition use :now', () => {
    const write = statusWrite({
      decrement: ['attemptsRemaining'],
      condition: `${attr('expiresAt')} > :now`,
      now: NOW,
    });
    expect(write.UpdateExpression).toBe(
      'SET #attempts_remaining = #attempts_remaining - :one, #event_at = :now ADD #event_seq :one',
    );
    expect(write.ExpressionAttributeValues).toEqual({ ':now': NOW.toISOString(), ':one': 1 });
  });

  it('refuses an unknown attribute, a value it does not use, and a clash with its own values', () => {
    const base = { set: { status: 'EXPIRED' }, now: NOW };
    expect(() => statusWrite({ ...base, condition: '#nope = :x', values: { ':x': 1 } })).toThrow(/#nope/);
    expect(() =>
      statusWrite({ ...base, condition: 'attribute_exists(#status)', values: { ':x': 1 } }),
    ).toThrow(/:x/);
    expect(() => statusWrite({ ...base, condition: '#status = :one', values: { ':one': 2 } })).toThrow(
      /:one/,
    );
  });

  it('uses the attribute names the webhook events read', () => {
    expect([VERIFICATION_ATTR.eventAt, VERIFICATION_ATTR.eventSeq]).toEqual(['event_at', 'event_seq']);
  });
});

describe("DynamoStore's status writes", () => {
  /** A client that records the UpdateItems it is asked for and answers as if they were applied. */
  const recording = () => {
    const updates: UpdateCommand['input'][] = [];
    const client = {
      send: async (command: unknown) => {
        if (command instanceof UpdateCommand) updates.push(command.input);
        return { Attributes: { sid: 'VE1', status: 'PENDING' } };
      },
    } as unknown as DynamoDBDocumentClient;
    return { store: new DynamoStore(client, 'table'), updates };
  };

  it.each([
    ['spendAttempt', (s: DynamoStore) => s.spendAttempt('VE1', 'VA1', 'guess', NOW)],
    ['markExpired', (s: DynamoStore) => s.markExpired('VE1', NOW)],
    ['finishDelivery', (s: DynamoStore) => s.finishDelivery('VE1', 'SENT', NOW)],
    ['markDelivered', (s: DynamoStore) => s.markDelivered('VE1', 'sna', NOW)],
  ])('%s sets event_at and adds to event_seq', async (_, write) => {
    const { store, updates } = recording();
    await write(store);
    expect(updates).toHaveLength(1);
    const [update] = updates;
    expect(update!.UpdateExpression).toMatch(/#event_at = :now\b.* ADD #event_seq :one$/);
    expect(update!.ExpressionAttributeNames).toMatchObject({
      '#event_at': 'event_at',
      '#event_seq': 'event_seq',
    });
    expect(update!.ExpressionAttributeValues).toMatchObject({ ':now': NOW.toISOString(), ':one': 1 });
  });

  it('no other update writes status or delivery_status', async () => {
    const { store, updates } = recording();
    await store.claimChannel('VE1', 0, { channel: 'sna', outcome: 'sending', at: NOW.toISOString() });
    await store.recordChannelOutcome('VE1', 0, {
      channel: 'sna',
      outcome: 'accepted',
      at: NOW.toISOString(),
    });
    await store.recordRejections('+447400123456', ['sna'], NOW);
    for (const update of updates) {
      expect(`${update.UpdateExpression}`).not.toMatch(/status/);
      expect(Object.values(update.ExpressionAttributeNames ?? {})).not.toContain('delivery_status');
    }
  });
});
