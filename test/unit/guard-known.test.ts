/**
 * A known number (the code of one of the service's last sends to it checked): how the number's log keeps those
 * sends, how their verifications make it known, the verdict (it passes what the guard learnt, never the lists or
 * the owner's caps), and the blocks' probes (its pass is none).
 */
import {
  KNOWN_NUMBER,
  type CountryGuardState,
  type GuardBlock,
  type GuardLevel,
  type KnownNumber,
} from '../../functions/core/guard/model';
import { knownFrom, recentAfter, recentSids } from '../../functions/core/guard/known';
import { foldCountryProbes } from '../../functions/core/guard/rules/block-life';
import { isProbe, serviceTag } from '../../functions/core/guard/aggregates';
import type { NumberRecord, Verification } from '../../functions/core/model';
import { guardVerdict } from '../../functions/core/guard/verdict';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const DAY = 86_400_000;
const SERVICE = `VA${'1'.repeat(32)}`;
/** A GB number that is no probe now. */
const TO = (() => {
  for (let n = 7_400_100_000; ; n++) if (!isProbe(`+44${n}`, NOW)) return `+44${n}`;
})();

const block = (reason: GuardBlock['reason'], probes: boolean): GuardBlock => ({
  prefix: '+447400',
  reason,
  level: 'standard',
  since: NOW - 60_000,
  until: NOW + 3_600_000,
  figures: {},
  ...(probes && { probes: {} }),
});
const stateWith = (blocks: GuardBlock[]): CountryGuardState => ({ blocks, established: [], lifted: {} });

const verdict = (country: CountryGuardState, known?: KnownNumber, level: GuardLevel = 'standard', to = TO) =>
  guardVerdict({
    settings: { level, safeList: [] },
    serviceSid: SERVICE,
    riskCheckDisabled: false,
    e164: to,
    country: 'GB',
    view: { service: { country }, global: {}, ...(known && { known }) },
    now: NOW,
  }).action;

describe('the verdict for a known number', () => {
  const sequence = stateWith([block('sequential_numbers', true)]);

  it(`passes a learnt block while its checked send is under ${KNOWN_NUMBER.forMs / DAY} days old`, () => {
    expect(verdict(sequence)).toBe('block');
    expect(verdict(sequence, { at: NOW - 6 * DAY })).toBe('known');
    expect(verdict(sequence, { at: NOW - KNOWN_NUMBER.forMs })).toBe('block');
    // At shadow nothing is refused; the record says why standard would not refuse it either.
    expect(verdict(sequence, { at: NOW - DAY }, 'shadow')).toBe('known');
  });

  it("at shadow, a learnt block asks for the number's last sends: the lists and caps do not", () => {
    const at = (country: CountryGuardState, to = TO) =>
      guardVerdict({
        settings: { level: 'shadow', safeList: [] },
        serviceSid: SERVICE,
        riskCheckDisabled: false,
        e164: to,
        country: 'GB',
        view: { service: { country }, global: {} },
        now: NOW,
      });
    expect(at(sequence)).toMatchObject({ action: 'shadow', unlessKnown: true });
    expect(at(stateWith([block('country_cap', false)]))).not.toHaveProperty('unlessKnown');
    expect(at(stateWith([]), '+447012345678')).not.toHaveProperty('unlessKnown');
  });

  it("never passes an owner's cap or the high-risk list", () => {
    const known = { at: NOW - DAY };
    expect(verdict(stateWith([block('country_cap', false)]), known)).toBe('block');
    // +4470: personal numbering, on the shipped high-risk list.
    expect(verdict(stateWith([]), known, 'standard', '+447012345678')).toBe('block');
  });

  it('a global block without the quorum stays shadow, known or not', () => {
    const global = { ...block('sequential_numbers', true), services: [serviceTag(SERVICE), 'a', 'b'] };
    const action = guardVerdict({
      settings: { level: 'standard', safeList: [] },
      serviceSid: SERVICE,
      riskCheckDisabled: false,
      e164: TO,
      country: 'GB',
      view: { service: {}, global: { country: stateWith([global]) }, known: { at: NOW - DAY } },
      now: NOW,
    }).action;
    expect(action).toBe('shadow');
  });
});

describe("a known number's pass and the block's probes", () => {
  it('counts neither as a probe nor as a probe checked; a probe does', () => {
    const state = stateWith([block('sequential_numbers', true)]);
    const common = { serviceSid: SERVICE, e164: TO, country: 'GB' };
    const decision = {
      reason: 'sequential_numbers' as const,
      prefix: '+447400',
      scope: 'service' as const,
      figures: {},
      price: 600,
      at: NOW,
    };
    foldCountryProbes(
      state,
      { kind: 'send', ...common, at: NOW, accepted: true, decision: { ...decision, mode: 'known' } },
      false,
    );
    foldCountryProbes(
      state,
      { kind: 'conversion', ...common, at: NOW + 30_000, sentAt: NOW, known: true },
      false,
    );
    expect(state.blocks[0]!.probes).toEqual({});
    foldCountryProbes(state, { kind: 'send', ...common, at: NOW, accepted: true }, false);
    foldCountryProbes(state, { kind: 'conversion', ...common, at: NOW + 30_000, sentAt: NOW }, false);
    expect(Object.values(state.blocks[0]!.probes!)).toEqual([[1, 1]]);
  });
});

describe("the number's last sends and the verifications they name", () => {
  const OTHER = `VA${'2'.repeat(32)}`;
  const empty: NumberRecord = { e164: TO, sends: [], rejectedUntil: {}, version: 0 };
  const verification = (sid: string, at: number, checked: boolean, serviceSid = SERVICE): Verification =>
    ({
      sid,
      serviceSid,
      to: TO,
      status: checked ? 'VERIFIED' : 'PENDING',
      attemptsRemaining: 5,
      dateCreated: new Date(at).toISOString(),
    }) as Verification;

  it(`keeps each service's last ${KNOWN_NUMBER.recent}, newest first, and the 8 services that sent last`, () => {
    let number = empty;
    for (let i = 1; i <= 3; i++)
      number = { ...number, recent: recentAfter(number, SERVICE, `VE${i}`, NOW + i) };
    expect(recentSids(number, SERVICE)).toEqual(['VE3', 'VE2']);
    for (let i = 0; i < 8; i++)
      number = { ...number, recent: recentAfter(number, `VA-${i}`, `VE-${i}`, NOW + 10 + i) };
    expect(Object.keys(number.recent!).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `VA-${i}`));
    expect(recentSids(number, SERVICE)).toEqual([]);
  });

  it("is known by the newest checked one of the service's last sends, as the log read with them names them", () => {
    const logOf = (e164: string, serviceSid: string, ...sids: string[]): NumberRecord => ({
      ...empty,
      e164,
      recent: { [serviceSid]: sids.map((sid, i) => ({ sid, at: NOW - i })) },
    });
    const log = logOf(TO, SERVICE, 'VE2', 'VE1');
    expect(knownFrom(undefined, log, SERVICE)).toBeUndefined();
    expect(
      knownFrom(
        [verification('VE2', NOW - DAY, false), verification('VE1', NOW - 2 * DAY, true)],
        log,
        SERVICE,
      ),
    ).toEqual({ at: NOW - 2 * DAY });
    // Another service's, another number's: nothing.
    expect(knownFrom([verification('VE1', NOW - DAY, true, OTHER)], log, SERVICE)).toBeUndefined();
    expect(
      knownFrom([verification('VE1', NOW - DAY, true)], logOf('+447400999999', SERVICE, 'VE1'), SERVICE),
    ).toBeUndefined();
    // Asked for from an older read: a checked send that is no longer one of the last two counts for nothing
    // (simultaneous sends would pass a third time).
    expect(
      knownFrom([verification('VE1', NOW - DAY, true)], logOf(TO, SERVICE, 'VE4', 'VE3'), SERVICE),
    ).toBeUndefined();
  });
});
