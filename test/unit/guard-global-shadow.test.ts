/**
 * A global block that too few other services showed is shadow only for a service (guard.md, Tenants): it must not
 * hide the service's own blocks from its verdict. Otherwise one tenant's traffic, which alone can make a global
 * block on any range it sends to, would pass pumping the victim's own guard had closed its country against.
 */
import { isProbe, serviceTag } from '../../functions/core/guard/aggregates';
import type {
  CountryGuardState,
  GuardBlock,
  NoveltyBlock,
  ScopeGuardState,
} from '../../functions/core/guard/model';
import { GLOBAL_QUORUM } from '../../functions/core/guard/rules/judging';
import { guardVerdict } from '../../functions/core/guard/verdict';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const VICTIM = `VA${'1'.repeat(32)}`;
const others = (count: number) =>
  Array.from({ length: count }, (_, i) => serviceTag(`VA${String(i + 2).repeat(32)}`));
/** A GB number that is no probe now, in the range +447400. */
const TO = (() => {
  for (let n = 7_400_100_000; ; n++) if (!isProbe(`+44${n}`, NOW)) return `+44${n}`;
})();

const live = { level: 'standard' as const, since: NOW - 60_000, until: NOW + 3_600_000, figures: {} };
const globalBlock = (services: string[]): GuardBlock => ({
  prefix: '+4474001',
  reason: 'sequential_numbers',
  ...live,
  probes: {},
  services,
});
const country = (state: Partial<CountryGuardState>): CountryGuardState => ({
  blocks: [],
  established: [],
  lifted: {},
  ...state,
});
const closed: CountryGuardState = country({ closed: { reason: 'low_conversion', ...live, open: [] } });
const novelty: CountryGuardState = country({ novelty: { reason: 'novel_prefix_surge', ...live } });
const novelCountries: ScopeGuardState = {
  establishedCountries: [],
  lifted: {},
  novelCountries: { reason: 'novel_country_surge', ...live } satisfies NoveltyBlock,
};

const verdict = (
  own: { country?: CountryGuardState; all?: ScopeGuardState },
  global: CountryGuardState | undefined,
) =>
  guardVerdict({
    settings: { level: 'standard', safeList: [] },
    serviceSid: VICTIM,
    riskCheckDisabled: false,
    e164: TO,
    country: 'GB',
    view: { service: own, global: global ? { country: global } : {} },
    now: NOW,
  });

describe("a global block below the quorum leaves the service's own blocks in force", () => {
  const oneTenant = country({ blocks: [globalBlock(others(1))] });

  it.each([
    ['its country closed', { country: closed }, 'low_conversion'],
    ['its ranges not established', { country: novelty }, 'novel_prefix_surge'],
    ['its countries not established', { all: novelCountries }, 'novel_country_surge'],
  ])('%s: refused as without the global block', (_, own, reason) => {
    expect(verdict(own, undefined)).toMatchObject({ action: 'block', reason, scope: 'service' });
    expect(verdict(own, oneTenant)).toMatchObject({ action: 'block', reason, scope: 'service' });
  });

  it('with no block of its own, the global one is recorded as shadow, and applies from the quorum', () => {
    expect(verdict({}, oneTenant)).toMatchObject({ action: 'shadow', scope: 'global' });
    const quorum = country({ blocks: [globalBlock(others(GLOBAL_QUORUM))] });
    expect(verdict({}, quorum)).toMatchObject({ action: 'block', scope: 'global' });
  });
});
