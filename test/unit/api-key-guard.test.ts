/** The per-instance guard in front of the API-key write, on a wall clock the test moves. */
import type { KeyRequestOutcome } from '../../functions/core/ports';
import { API_KEY_GUARD_DEFAULTS, ApiKeyGuard } from '../../functions/http/middleware';

const { burst, lookupsPerSecond, negativeSeconds } = API_KEY_GUARD_DEFAULTS;

function guardAt(start = 1_000_000) {
  let now = start;
  const guard = new ApiKeyGuard(API_KEY_GUARD_DEFAULTS, () => now);
  return { guard, advance: (ms: number) => (now += ms) };
}

const unknown: KeyRequestOutcome = { outcome: 'unknown' };
const allowed = (window: number): KeyRequestOutcome => ({ outcome: 'allowed', window });

it('admits a burst of lookups of new keys, then refills at the set rate', () => {
  const { guard, advance } = guardAt();
  const admitted = Array.from({ length: burst + 50 }, (_, i) => guard.admit(`junk-${i}`).admitted);
  expect(admitted.filter(Boolean)).toHaveLength(burst);
  expect(guard.admit('junk-next')).toEqual({ admitted: false, reason: 'busy' });
  advance(1000);
  const afterOneSecond = Array.from({ length: 2 * lookupsPerSecond }, (_, i) => guard.admit(`later-${i}`));
  expect(afterOneSecond.filter((a) => a.admitted)).toHaveLength(lookupsPerSecond);
});

it('refuses a key found unknown from memory until the negative period ends', () => {
  const { guard, advance } = guardAt();
  expect(guard.admit('k').admitted).toBe(true);
  guard.remember('k', unknown);
  expect(guard.admit('k')).toEqual({ admitted: false, reason: 'rejected' });
  advance(negativeSeconds * 1000 - 1);
  expect(guard.admit('k')).toEqual({ admitted: false, reason: 'rejected' });
  advance(2);
  expect(guard.admit('k').admitted).toBe(true);
});

it('a key that worked is admitted even while the bucket is empty', () => {
  const { guard } = guardAt();
  expect(guard.admit('real').admitted).toBe(true);
  guard.remember('real', allowed(960_000));
  for (let i = 0; i < burst; i++) guard.admit(`junk-${i}`);
  expect(guard.admit('junk-more')).toEqual({ admitted: false, reason: 'busy' });
  expect(guard.admit('real')).toEqual({ admitted: true });
});

it('a revoked key is forgotten as good and refused from memory', () => {
  const { guard } = guardAt();
  guard.admit('key');
  guard.remember('key', allowed(60_000));
  guard.remember('key', { outcome: 'revoked' });
  expect(guard.admit('key')).toEqual({ admitted: false, reason: 'rejected' });
});
