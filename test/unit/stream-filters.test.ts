/**
 * The webhook events function's stream filters (functions/adapters/dynamodb/stream-filters.ts) as the local
 * stack's poller applies them (local/stream-poller.ts, matchesFilter): the same patterns the CDK stack deploys, so
 * the records they pass are the ones Lambda would hand to the function.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { guardDecisionToItem, verificationToItem } from '../../functions/adapters/dynamodb/items';
import { keys } from '../../functions/adapters/dynamodb/keys';
import {
  GUARD_SIGNALS_STREAM_FILTERS,
  WEBHOOK_EVENTS_STREAM_FILTERS,
  type FilterPattern,
} from '../../functions/adapters/dynamodb/stream-filters';
import { matchesFilter } from '../../local/stream-poller';
import { SERVICE_SID, aVerification } from '../support/fixtures';
import { streamRecord } from '../support/stream-records';

const passes = (r: DynamoDBRecord) =>
  WEBHOOK_EVENTS_STREAM_FILTERS.some((pattern) => matchesFilter(pattern, r));

const serviceSid = SERVICE_SID;
const verification = aVerification({ country: 'GB', channel: 'sms', channels: ['sms'] });

/** A service's country state as the guard's consumer writes it, with the alerts given. */
const guardState = (alerts: Record<string, unknown> = {}) => ({
  pk: `GUARD#${serviceSid}`,
  sk: 'COUNTRY#GB',
  type: 'guard_state',
  ...alerts,
});
const owner = { service_sid: serviceSid, country: 'GB' };
const capReached = { ...owner, cap: 'sends_per_hour', limit: 10, value: 10, since: 1, until: 2 };
const conversionDrop = { ...owner, sent: 40, checked: 2, usual_conversion: 0.8, ranges: 'all', since: 1 };

test('a verification sent while its service had an endpoint passes, created or changed; not its removal (TTL)', () => {
  const item = verificationToItem({ ...verification, webhooks: true });
  expect(passes(streamRecord('INSERT', item))).toBe(true);
  expect(passes(streamRecord('MODIFY', { ...item, status: 'VERIFIED' }, item))).toBe(true);
  expect(passes(streamRecord('REMOVE', undefined, item))).toBe(false);
});

test('a verification sent while its service had no endpoint never passes: no invocation for its writes', () => {
  const item = verificationToItem(verification);
  expect(item).not.toHaveProperty('webhooks');
  expect(passes(streamRecord('INSERT', item))).toBe(false);
  expect(passes(streamRecord('MODIFY', { ...item, status: 'VERIFIED', event_seq: 1 }, item))).toBe(false);
});

test('a guard country state passes only while it holds an alert: cap reached or conversion drop', () => {
  expect(passes(streamRecord('MODIFY', guardState({ cap_reached: capReached }), guardState()))).toBe(true);
  expect(passes(streamRecord('MODIFY', guardState({ conversion_drop: conversionDrop }), guardState()))).toBe(
    true,
  );
  expect(passes(streamRecord('MODIFY', guardState(), guardState({ cap_reached: capReached })))).toBe(false);
});

test('other items never pass: number logs, API keys, charges', () => {
  expect(passes(streamRecord('MODIFY', { ...keys.number('+447400123456'), sends: [1, 2] }))).toBe(false);
  expect(passes(streamRecord('INSERT', { ...keys.apiKey('k'.repeat(64)), service_sid: serviceSid }))).toBe(
    false,
  );
  expect(
    passes(streamRecord('INSERT', { pk: `SERVICE#${serviceSid}`, sk: 'CHARGE#1', type: 'charge' })),
  ).toBe(false);
});

test("`exists` matches a leaf only, never a map, as Lambda's filtering documents", () => {
  const r = streamRecord('MODIFY', guardState({ cap_reached: capReached }));
  const onTheMap: FilterPattern = { dynamodb: { NewImage: { cap_reached: { M: [{ exists: true }] } } } };
  const onALeaf: FilterPattern = {
    dynamodb: { NewImage: { cap_reached: { M: { service_sid: { S: [{ exists: true }] } } } } },
  };
  expect(matchesFilter(onTheMap, r)).toBe(false);
  expect(matchesFilter(onALeaf, r)).toBe(true);
  expect(matchesFilter({ dynamodb: { NewImage: { cap_reached: { M: [{ exists: false }] } } } }, r)).toBe(
    true,
  );
});

test('an operator the matcher does not model is refused, not guessed', () => {
  const r = streamRecord('INSERT', verificationToItem(verification));
  const prefix = { dynamodb: { NewImage: { type: { S: [{ prefix: 'ver' }] } } } } as unknown as FilterPattern;
  expect(() => matchesFilter(prefix, r)).toThrow(/Unsupported filter rule/);
});

describe("the guard's signals", () => {
  const guardPasses = (r: DynamoDBRecord) =>
    GUARD_SIGNALS_STREAM_FILTERS.some((pattern) => matchesFilter(pattern, r));
  const refusal = guardDecisionToItem({
    mode: 'blocked',
    reason: 'sequential_numbers',
    prefix: '+4474001',
    scope: 'service',
    figures: {},
    price: 600,
    at: 1,
    serviceSid,
    country: 'GB',
  });

  test('every verification passes, with or without an endpoint: sends, checks and receipts are signals', () => {
    for (const item of [
      verificationToItem(verification),
      verificationToItem({ ...verification, webhooks: true }),
    ])
      expect(guardPasses(streamRecord('MODIFY', { ...item, status: 'VERIFIED' }, item))).toBe(true);
  });

  test("a number's log passes when it holds a guard decision (a refused send), not otherwise", () => {
    const log = { ...keys.number('+447400123456'), sends: [1, 2] };
    expect(guardPasses(streamRecord('MODIFY', { ...log, guard: refusal }, log))).toBe(true);
    expect(guardPasses(streamRecord('MODIFY', log))).toBe(false);
    expect(
      guardPasses(streamRecord('INSERT', { ...keys.apiKey('k'.repeat(64)), service_sid: serviceSid })),
    ).toBe(false);
  });
});
