/**
 * A known number (it checked a code of the service lately) against the verdict and the blocks' probes: it passes
 * what the guard learnt, never the lists or the owner's caps, and its pass is no probe of the block.
 */
import {
  KNOWN_NUMBER,
  type CountryGuardState,
  type GuardBlock,
  type GuardLevel,
  type KnownNumber,
} from '../../functions/core/guard/model';
import { foldCountryProbes, isProbe, serviceTag } from '../../functions/core/guard/signals';
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

  it(`passes a learnt block within ${KNOWN_NUMBER.forMs / DAY} days of its check, ${KNOWN_NUMBER.passes} times`, () => {
    expect(verdict(sequence)).toBe('block');
    expect(verdict(sequence, { at: NOW - 10 * DAY, passes: 0 })).toBe('known');
    expect(verdict(sequence, { at: NOW - 10 * DAY, passes: KNOWN_NUMBER.passes - 1 })).toBe('known');
    expect(verdict(sequence, { at: NOW - 10 * DAY, passes: KNOWN_NUMBER.passes })).toBe('block');
    expect(verdict(sequence, { at: NOW - KNOWN_NUMBER.forMs, passes: 0 })).toBe('block');
    // At shadow nothing is refused; the record says why standard would not refuse it either.
    expect(verdict(sequence, { at: NOW - DAY, passes: 0 }, 'shadow')).toBe('known');
  });

  it("never passes an owner's cap or the high-risk list", () => {
    const known = { at: NOW - DAY, passes: 0 };
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
      view: { service: {}, global: { country: stateWith([global]) }, known: { at: NOW - DAY, passes: 0 } },
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
