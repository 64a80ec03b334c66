/**
 * The pumping guard through the core: signals folded by the consumer into the memory guard store, verdicts on
 * the send path (memory store, fake clock). Each signal, each level, the safe list, RiskCheck=disable, expiry,
 * lifting by hand, and a blocked send never charged.
 */
import { OtpError, type ErrorCode } from '../../functions/core/errors';
import { GLOBAL_SCOPE, consumeGuardEvents } from '../../functions/core/guard/consumer';
import type { GuardLevel } from '../../functions/core/guard/model';
import { longestRun, type GuardEvent } from '../../functions/core/guard/signals';
import { parsePhone } from '../../functions/core/phone';
import { coreWorld, type CoreWorld } from '../support/core-world';

const MINUTE = 60_000;
let world: CoreWorld;
let serviceSid: string;

beforeEach(() => {
  world = coreWorld();
  serviceSid = world.addService().sid;
});

/** A GB mobile `+44 74d ddd dddd` from a number below 10^8 (+447400000000 and up: valid mobiles). */
const gb = (n: number) => `+4474${String(n).padStart(8, '0')}`;
const now = () => world.clock.now().getTime();

const sendEvent = (
  e164: string,
  at = now(),
  country = parsePhone(e164)!.country,
): Extract<GuardEvent, { kind: 'send' }> => ({
  kind: 'send',
  serviceSid,
  e164,
  country,
  at,
  accepted: true,
});
const conversionEvent = (e164: string, sentAt: number, at = sentAt + 30_000): GuardEvent => ({
  kind: 'conversion',
  serviceSid,
  e164,
  country: parsePhone(e164)!.country,
  at,
  sentAt,
  flagged: false,
});

const consume = (events: GuardEvent[]) =>
  consumeGuardEvents({ store: world.store.guard, clock: world.clock }, events);

/**
 * Yesterday's traffic: `perRange` sends with codes checked in each range (`+447400`..), so those ranges and the
 * countries are established.
 */
async function baseline(numbers: string[], perNumber = 1): Promise<void> {
  const start = now() - 24 * 60 * MINUTE;
  const events: GuardEvent[] = [];
  numbers.forEach((e164, i) => {
    for (let k = 0; k < perNumber; k++) {
      const at = start + (i * perNumber + k) * MINUTE;
      events.push(sendEvent(e164, at), conversionEvent(e164, at));
    }
  });
  await consume(events);
}

const established = () =>
  [0, 1, 2, 3].flatMap((r) => [1, 2, 3, 4, 5].map((k) => gb(r * 1_000_000 + k * 7919)));

const setLevel = (level: GuardLevel, safeList: string[] = []) => {
  const service = world.store.getService(serviceSid)!;
  world.store.putService({ ...service, guard: { level, safeList } });
};

async function refusal(
  to: string,
  extra: { riskCheckDisabled?: boolean } = {},
): Promise<OtpError | undefined> {
  try {
    await world.send({ serviceSid, to, ...extra });
    return undefined;
  } catch (error) {
    if (error instanceof OtpError) return error;
    throw error;
  }
}
const code = async (to: string, extra: { riskCheckDisabled?: boolean } = {}): Promise<ErrorCode | 'sent'> =>
  (await refusal(to, extra))?.code ?? 'sent';

/** Yesterday: +447400 carried 70 of 81 checked codes; +447401 (8) and +447402 (3) are established but thin. */
async function floodBaseline(): Promise<void> {
  const inRange = (range: number, count: number) =>
    Array.from({ length: count }, (_, k) => gb(range * 1_000_000 + 1 + k * 7919));
  await baseline([...inRange(0, 70), ...inRange(1, 8), ...inRange(2, 3)]);
}

/** Two numbers in each of three countries the service never served. */
const NEW_COUNTRIES = [
  '+4915123456789',
  '+4915123456790',
  '+33612345678',
  '+33612345699',
  '+393123456789',
  '+393123456700',
];

/** Five numbers one to two apart in +44 7409 999xxx, sent within two minutes. */
async function sequentialRun(length = 5): Promise<void> {
  const events = Array.from({ length }, (_, i) =>
    sendEvent(gb(9_999_100 + i * 2), now() - (length - i) * 20_000),
  );
  await consume(events);
}

describe('signals', () => {
  it('sequential numbers: a run of 5 near-consecutive numbers blocks their thousand, not the next one', async () => {
    await sequentialRun(5);
    const error = await refusal(gb(9_999_700));
    expect(error?.code).toBe('blocked_by_policy');
    expect(error?.message).toContain('unusual traffic to this number range');
    expect(error?.message).not.toMatch(/\d/);
    expect(await code(gb(9_998_700))).toBe('sent');
    const state = world.store.guard.country(serviceSid, 'GB')!.state;
    expect(state.blocks).toEqual([
      expect.objectContaining({ prefix: '+447409999', reason: 'sequential_numbers', level: 'standard' }),
    ]);
    expect(state.blocks[0]!.figures.run).toBe(5);
  });

  it('sequential numbers: the same five numbers far apart make no run', async () => {
    await consume([0, 1, 2, 3, 4].map((i) => sendEvent(gb(9_999_000 + i * 150))));
    expect(await code(gb(9_999_700))).toBe('sent');
    expect(longestRun([1, 2, 3, 5, 9, 10])).toBe(4);
  });

  it('prefix surge: a range far above its baseline share, codes not checked, is blocked', async () => {
    await baseline(established());
    // 8 sends into +447408 (never used), none checked, 10 minutes ago: matured and unconverted.
    await consume(
      Array.from({ length: 8 }, (_, i) => sendEvent(gb(8_000_000 + i * 1013), now() - 10 * MINUTE)),
    );
    const error = await refusal(gb(8_055_555));
    expect(error?.code).toBe('blocked_by_policy');
    const block = world.store.guard
      .country(serviceSid, 'GB')!
      .state.blocks.find((b) => b.prefix === '+447408');
    expect(block).toMatchObject({ reason: 'prefix_surge', level: 'standard' });
    expect(block!.figures).toMatchObject({ sends_30m: 8, baseline_share: 0, checked: 0 });
    // An established range is not touched.
    expect(await code(gb(1_000_001))).toBe('sent');
  });

  it('share against baseline: a range at its usual share is not blocked even with no code checked', async () => {
    // +447400 carried most of yesterday's traffic: all of today's going there, unchecked (say, an outage of the
    // channel), is above its share but not three times it.
    await baseline([...established(), ...Array.from({ length: 20 }, (_, i) => gb(i * 101))]);
    await consume(Array.from({ length: 16 }, (_, i) => sendEvent(gb(50_000 + i * 77), now() - 10 * MINUTE)));
    const state = world.store.guard.country(serviceSid, 'GB')!.state;
    expect(state.blocks).toEqual([]);
    expect(state.novelty).toBeUndefined();
    expect(await code(gb(60_000))).toBe('sent');
  });

  it('never-seen ranges: a flood into ranges not established blocks them, established ranges still send', async () => {
    await baseline(established());
    // 12 sends in 10 minutes, each in a range the service never saw (+447404 to +447415).
    await consume(Array.from({ length: 12 }, (_, i) => sendEvent(gb((4 + i) * 1_000_000 + 17))));
    const state = world.store.guard.country(serviceSid, 'GB')!.state;
    expect(state.novelty).toMatchObject({ reason: 'novel_prefix_surge', level: 'standard' });
    expect(state.established).toContain('+447400');
    expect((await refusal(gb(20_123_456)))?.message).toContain('unusual traffic to new destinations');
    expect(await code(gb(2_000_123))).toBe('sent');
  });

  it('country flood: while a flood into new ranges goes on, thin established ranges close too, until it stops', async () => {
    await floodBaseline();
    await consume(Array.from({ length: 12 }, (_, i) => sendEvent(gb((4 + i) * 1_000_000 + 17))));
    const flooded = world.store.guard.country(serviceSid, 'GB')!.state;
    expect(flooded.novelty?.flood).toMatchObject({
      open: ['+447400'],
      figures: { novel_sends_10m: 12, ranges_open: 1, ranges_closed: 2 },
    });
    const thin = await refusal(gb(2_000_123));
    expect(thin?.code).toBe('blocked_by_policy');
    expect(thin?.message).toContain('unusual traffic to this country');
    expect(await code(gb(1_000_321))).toBe('blocked_by_policy');
    expect(await code(gb(123_457))).toBe('sent');

    // No flood for 16 minutes: the thin ranges reopen; new ranges stay blocked while the novelty block holds.
    world.clock.advance(16 * MINUTE);
    await consume([sendEvent(gb(222_222))]);
    const after = world.store.guard.country(serviceSid, 'GB')!.state;
    expect(after.novelty).toMatchObject({ reason: 'novel_prefix_surge' });
    expect(after.novelty?.flood).toBeUndefined();
    expect(await code(gb(2_000_321))).toBe('sent');
    expect(await code(gb(30_000_017))).toBe('blocked_by_policy');
  });

  it('country flood: a novelty block with no flood going on closes no established range', async () => {
    await floodBaseline();
    // 9 unchecked sends to new ranges spread over 25 minutes: the slow rule, not a flood (under 10 in 10 minutes).
    await consume(
      Array.from({ length: 9 }, (_, i) =>
        sendEvent(gb((4 + i) * 1_000_000 + 17), now() - (30 - 3 * i) * MINUTE),
      ),
    );
    const state = world.store.guard.country(serviceSid, 'GB')!.state;
    expect(state.novelty).toMatchObject({ reason: 'novel_prefix_surge' });
    expect(state.novelty?.flood).toBeUndefined();
    expect(await code(gb(2_000_123))).toBe('sent');
  });

  it('never-seen countries: unchecked sends to 3 new countries block new countries, not established ones', async () => {
    await baseline(established());
    const at = now() - 10 * MINUTE;
    await consume(NEW_COUNTRIES.map((e164) => sendEvent(e164, at)));
    expect(world.store.guard.scope(serviceSid)!.state.novelCountries).toMatchObject({
      reason: 'novel_country_surge',
    });
    expect(await code('+34612345678')).toBe('blocked_by_policy');
    expect(await code(gb(3_000_321))).toBe('sent');
  });

  it('never-seen countries: a new country whose users check their codes is not blocked', async () => {
    await baseline(established());
    const at = now() - 10 * MINUTE;
    await consume(NEW_COUNTRIES.flatMap((e164) => [sendEvent(e164, at), conversionEvent(e164, at)]));
    expect(world.store.guard.scope(serviceSid)!.state.novelCountries).toBeUndefined();
    expect(await code('+34612345678')).toBe('sent');
  });

  it('never-seen ranges across countries: blocked at strict only', async () => {
    await baseline([
      ...established(),
      '+4915123400001',
      '+4915123400002',
      '+4915123400003',
      '+33612300001',
      '+33612300002',
      '+33612300003',
    ]);
    const at = now() - 10 * MINUTE;
    // Unchecked sends into new ranges of three established countries, a few each.
    await consume(
      [
        gb(90_000_001),
        gb(91_000_001),
        gb(92_000_001),
        '+4916012345678',
        '+4917012345678',
        '+4917612345678',
        '+33644556677',
        '+33698765432',
        '+33665432198',
      ].map((e164) => sendEvent(e164, at)),
    );
    expect(world.store.guard.scope(serviceSid)!.state.novelRanges).toMatchObject({
      reason: 'novel_prefix_spread',
      level: 'strict',
    });
    setLevel('standard');
    expect(await code(gb(93_000_001))).toBe('sent');
    setLevel('strict');
    expect(await code(gb(94_000_001))).toBe('blocked_by_policy');
  });

  it('known high-risk ranges (shipped list): blocked with no signal at all', async () => {
    const error = await refusal('+447011234567');
    expect(error?.code).toBe('blocked_by_policy');
    expect(error?.message).toContain('a known high-risk number range');
    expect(world.store.guardRefusals[0]).toMatchObject({
      reason: 'high_risk_range',
      prefix: '+4470',
      scope: 'list',
    });
  });

  it('global scope: a run sent through another service blocks this one too', async () => {
    const other = world.addService().sid;
    await consume(
      Array.from({ length: 5 }, (_, i) => ({ ...sendEvent(gb(9_999_100 + i)), serviceSid: other })),
    );
    expect(world.store.guard.country(GLOBAL_SCOPE, 'GB')!.state.blocks[0]!.prefix).toBe('+447409999');
    expect(await code(gb(9_999_600))).toBe('blocked_by_policy');
  });
});

describe('levels, safe list, RiskCheck', () => {
  it('off: no verdict at all, not even the high-risk list', async () => {
    setLevel('off');
    await sequentialRun(5);
    expect(await code(gb(9_999_700))).toBe('sent');
    expect(await code('+447011234567')).toBe('no_eligible_channel');
  });

  it('shadow: sends and charges, records the decision it would have made on the verification', async () => {
    setLevel('shadow');
    await sequentialRun(5);
    const result = await world.send({ serviceSid, to: gb(9_999_700) });
    const stored = await world.store.getVerification(result.verification.sid);
    expect(stored!.guard).toMatchObject({
      mode: 'shadow',
      reason: 'sequential_numbers',
      prefix: '+447409999',
      price: 600,
    });
    expect(world.store.charges(serviceSid)).toHaveLength(1);
    // The consumer keeps it in the service's report.
    await consume([{ ...sendEvent(gb(9_999_700)), decision: stored!.guard! }]);
    expect(world.store.guard.scope(serviceSid)!.report.lines).toEqual([
      expect.objectContaining({ mode: 'shadow', reason: 'sequential_numbers', sends: 1, saved: 0 }),
    ]);
  });

  it('standard and strict: a run of 4 is a strict signal, refused at strict only', async () => {
    await sequentialRun(4);
    setLevel('standard');
    expect(await code(gb(9_999_700))).toBe('sent');
    setLevel('strict');
    expect(await code(gb(9_999_701))).toBe('blocked_by_policy');
  });

  it('safe list: a number or a prefix on it is never blocked by the guard', async () => {
    await sequentialRun(5);
    setLevel('standard', [gb(9_999_700), '+4470']);
    expect(await code(gb(9_999_700))).toBe('sent');
    expect(await code(gb(9_999_800))).toBe('blocked_by_policy');
    // The guard lets it through; the channels cannot reach a personal number.
    expect(await code('+447011234567')).toBe('no_eligible_channel');
  });

  it('RiskCheck=disable skips the guard for that send only, where the owner allows it', async () => {
    await sequentialRun(5);
    expect(await code(gb(9_999_700), { riskCheckDisabled: true })).toBe('blocked_by_policy');
    const service = world.store.getService(serviceSid)!;
    world.store.putService({ ...service, guard: { level: 'standard', safeList: [], riskCheckOptOut: true } });
    expect(await code(gb(9_999_700), { riskCheckDisabled: true })).toBe('sent');
    expect(await code(gb(9_999_701))).toBe('blocked_by_policy');
  });
});

describe('blocks', () => {
  it('a blocked send is never charged, counts toward the per-number limits and records its decision', async () => {
    await sequentialRun(5);
    const before = world.store.getService(serviceSid)!.balance;
    expect(await code(gb(9_999_700))).toBe('blocked_by_policy');
    expect(world.store.getService(serviceSid)!.balance).toBe(before);
    expect(world.store.charges(serviceSid)).toEqual([]);
    expect(world.workflow.started).toEqual([]);
    expect((await world.store.getNumber(gb(9_999_700))).sends).toHaveLength(1);
    expect(world.store.guardRefusals).toEqual([
      expect.objectContaining({
        mode: 'blocked',
        reason: 'sequential_numbers',
        price: 600,
        serviceSid,
        country: 'GB',
      }),
    ]);
    // Each refusal is counted in the number's log, as any refused send.
    await code(gb(9_999_700));
    await code(gb(9_999_700));
    expect((await world.store.getNumber(gb(9_999_700))).sends).toHaveLength(3);
  });

  it('expire: the block lifts by itself 30 minutes after the signal stops', async () => {
    await sequentialRun(5);
    expect(await code(gb(9_999_700))).toBe('blocked_by_policy');
    world.clock.advance(29 * MINUTE);
    expect(await code(gb(9_999_701))).toBe('blocked_by_policy');
    world.clock.advance(2 * MINUTE);
    expect(await code(gb(9_999_702))).toBe('sent');
    // The next fold drops it from the stored state.
    await consume([sendEvent(gb(3_000_000))]);
    expect(world.store.guard.country(serviceSid, 'GB')!.state.blocks).toEqual([]);
  });

  it('renewed while the signal lasts', async () => {
    await sequentialRun(5);
    world.clock.advance(20 * MINUTE);
    await sequentialRun(5);
    world.clock.advance(20 * MINUTE);
    expect(await code(gb(9_999_700))).toBe('blocked_by_policy');
  });

  it('lifted by hand: no block applies and the rules do not make it again until the lift ends', async () => {
    await sequentialRun(5);
    world.store.guard.editCountryState(serviceSid, 'GB', (state) => {
      state.blocks = [];
      state.lifted = { '+447409999': now() + 60 * MINUTE };
    });
    expect(await code(gb(9_999_700))).toBe('sent');
    await sequentialRun(6);
    expect(await code(gb(9_999_701))).toBe('sent');
    expect(world.store.guard.country(serviceSid, 'GB')!.state.blocks).toEqual([]);
  });
});
