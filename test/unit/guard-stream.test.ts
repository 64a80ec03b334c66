/** The table's stream records as the guard's events: what the guard's consumer folds, and what it ignores. */
import { guardDecisionToItem, verificationToItem } from '../../functions/adapters/dynamodb/items';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { guardEventFromStreamRecord, reportConversionDrop } from '../../functions/adapters/guard/stream';
import type { Logger } from '../../functions/adapters/logger';
import { InMemoryMetrics, METRIC } from '../../functions/core/metrics';
import type { GuardDecision } from '../../functions/core/guard/model';
import { pendingSmsVerification, streamRecord } from '../support/stream-records';

const verification = pendingSmsVerification;
const created = verification.dateCreated;
const decision: GuardDecision = {
  mode: 'shadow',
  reason: 'prefix_surge',
  prefix: '+447400',
  scope: 'service',
  figures: { sends_30m: 9 },
  price: 600,
  at: Date.parse(created),
};

/** The accepted send's event of `verification` as the stream record of its creation says it. */
const acceptedSend = {
  kind: 'send',
  serviceSid: verification.serviceSid,
  e164: verification.to,
  country: 'GB',
  at: Date.parse(created),
  accepted: true,
  price: verification.price,
};

describe('guard events from the stream', () => {
  it('a new verification is an accepted send, with its shadow decision', () => {
    expect(
      guardEventFromStreamRecord(
        streamRecord('INSERT', verificationToItem({ ...verification, guard: decision })),
      ),
    ).toEqual({ ...acceptedSend, decision });
  });

  it('a send the guard did not judge (RiskCheck=disable allowed, safe list) is no event, nor is its check', () => {
    const exempt = verificationToItem({ ...verification, guardExempt: true });
    expect(exempt.guard_exempt).toBe(true);
    expect(guardEventFromStreamRecord(streamRecord('INSERT', exempt))).toBeUndefined();
    const checked = { ...exempt, last_guess: 'hash-of-code', event_at: '2026-11-22T10:00:40.000Z' };
    expect(guardEventFromStreamRecord(streamRecord('MODIFY', checked, exempt))).toBeUndefined();
  });

  it("a send with the caller's own code counts as a send for the caps, and its receipt is no event", () => {
    const own = verificationToItem({ ...verification, clientCode: true });
    expect(guardEventFromStreamRecord(streamRecord('INSERT', own))).toEqual({
      ...acceptedSend,
      callerCode: true,
    });
    // Its code is checked by the caller, never here: a receipt would weigh a code the guard cannot see typed.
    const delivered = { ...own, delivery_status: 'DELIVERED', event_at: '2026-11-22T10:00:03.000Z' };
    expect(guardEventFromStreamRecord(streamRecord('MODIFY', delivered, own))).toBeUndefined();
  });

  it('a verification whose recorded guess is its code is a checked code (once)', () => {
    const before = verificationToItem(verification);
    const after = {
      ...before,
      last_guess: 'hash-of-code',
      attempts_remaining: 4,
      event_at: '2026-11-22T10:00:40.000Z',
    };
    expect(guardEventFromStreamRecord(streamRecord('MODIFY', after, before))).toEqual({
      kind: 'conversion',
      serviceSid: verification.serviceSid,
      e164: verification.to,
      country: 'GB',
      at: Date.parse('2026-11-22T10:00:40.000Z'),
      sentAt: Date.parse(created),
    });
    // A later write of a verified code (its receipt) is no second conversion; a wrong guess is no conversion.
    expect(
      guardEventFromStreamRecord(streamRecord('MODIFY', { ...after, delivery_status: 'DELIVERED' }, after)),
    ).toMatchObject({ kind: 'delivered' });
    expect(
      guardEventFromStreamRecord(streamRecord('MODIFY', { ...before, last_guess: 'wrong' }, before)),
    ).toBeUndefined();
  });

  it("a known number's pass is a send with its decision; its checked code says so (no probe of the block)", () => {
    const known: GuardDecision = { ...decision, mode: 'known' };
    const before = verificationToItem({ ...verification, guard: known });
    expect(guardEventFromStreamRecord(streamRecord('INSERT', before))).toMatchObject({
      kind: 'send',
      decision: known,
    });
    const after = { ...before, last_guess: 'hash-of-code', event_at: '2026-11-22T10:00:40.000Z' };
    expect(guardEventFromStreamRecord(streamRecord('MODIFY', after, before))).toEqual({
      kind: 'conversion',
      serviceSid: verification.serviceSid,
      e164: verification.to,
      country: 'GB',
      at: Date.parse('2026-11-22T10:00:40.000Z'),
      sentAt: Date.parse(created),
      known: true,
    });
  });

  it('a verification that became DELIVERED is a receipt, with its time and its send time (once)', () => {
    const sent = verificationToItem(verification);
    const delivered = { ...sent, delivery_status: 'DELIVERED', event_at: '2026-11-22T10:00:03.000Z' };
    expect(guardEventFromStreamRecord(streamRecord('MODIFY', delivered, sent))).toEqual({
      kind: 'delivered',
      serviceSid: verification.serviceSid,
      e164: verification.to,
      country: 'GB',
      at: Date.parse('2026-11-22T10:00:03.000Z'),
      sentAt: Date.parse(created),
    });
    // SENT (no receipt) is not delivered; a duplicate receipt, or the code checked after it, is no second receipt.
    expect(
      guardEventFromStreamRecord(streamRecord('MODIFY', { ...sent, delivery_status: 'SENT' }, sent)),
    ).toBeUndefined();
    expect(
      guardEventFromStreamRecord(streamRecord('MODIFY', { ...delivered, event_seq: 3 }, delivered)),
    ).toBeUndefined();
    const exempt = { ...delivered, guard_exempt: true };
    expect(
      guardEventFromStreamRecord(streamRecord('MODIFY', exempt, { ...sent, guard_exempt: true })),
    ).toBeUndefined();
  });

  it('a number log that gained a guard decision is a refused send, counted once', () => {
    const guard = guardDecisionToItem({
      ...decision,
      mode: 'blocked',
      serviceSid: verification.serviceSid,
      country: 'GB',
    });
    const number = { ...keys.number('+447400123456'), sends: [1], version: 1 };
    const after = { ...number, version: 2, guard };
    expect(guardEventFromStreamRecord(streamRecord('MODIFY', after, number))).toEqual({
      kind: 'send',
      serviceSid: verification.serviceSid,
      e164: '+447400123456',
      country: 'GB',
      at: decision.at,
      accepted: false,
      decision: { ...decision, mode: 'blocked' },
    });
    // The next write of the log (an accepted send) keeps the old decision: not a new refusal.
    expect(
      guardEventFromStreamRecord(streamRecord('MODIFY', { ...after, version: 3 }, after)),
    ).toBeUndefined();
  });

  it("a refused send with the caller's own code says so, as its accepted twin does", () => {
    const guard = guardDecisionToItem({
      ...decision,
      mode: 'blocked',
      serviceSid: verification.serviceSid,
      country: 'GB',
      callerCode: true,
    });
    expect(guard.caller_code).toBe(true);
    const number = { ...keys.number('+447400123456'), sends: [1], version: 1 };
    expect(
      guardEventFromStreamRecord(streamRecord('MODIFY', { ...number, version: 2, guard }, number)),
    ).toMatchObject({ kind: 'send', accepted: false, callerCode: true, decision: { mode: 'blocked' } });
  });

  it('ignores other items and deletions', () => {
    expect(
      guardEventFromStreamRecord(streamRecord('MODIFY', { ...keys.number('+447400123456'), sends: [1] })),
    ).toBeUndefined();
    expect(
      guardEventFromStreamRecord(streamRecord('REMOVE', undefined, verificationToItem(verification))),
    ).toBeUndefined();
    expect(
      guardEventFromStreamRecord(streamRecord('INSERT', { ...keys.service('VA1'), type: 'service' })),
    ).toBeUndefined();
  });
});

test("a country's conversion drop is counted for its alarm and logged with its figures", () => {
  const metrics = new InMemoryMetrics();
  const logs: unknown[] = [];
  const logger: Logger = { log: (level, event, fields) => void logs.push({ level, event, fields }) };
  const figures = { sends_60m: 112, checked_60m: 42, usual_conversion: 0.8, missing: 48 };
  reportConversionDrop(logger, metrics)(verification.serviceSid, 'ID', figures);
  expect(metrics.total(METRIC.guardConversionDrops)).toBe(1);
  expect(logs).toEqual([
    {
      level: 'warn',
      event: 'guard.conversion_drop',
      fields: { scope: verification.serviceSid, country: 'ID', figures: JSON.stringify(figures) },
    },
  ]);
});
