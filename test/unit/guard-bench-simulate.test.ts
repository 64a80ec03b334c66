/**
 * The pumping-guard bench's replay (bench/guard/simulate.ts) over a bench that records its calls: receipts come
 * at their planned time for every accepted send, or never (`--receipts none`, what the figures without receipts
 * are run with); refused sends get none; the consumer runs once per batching window, after every call of the
 * window, those the window's own sends led to included.
 */
import type { GuardBench, SendOutcome } from '../../bench/guard/backend';
import type { Scenario } from '../../bench/guard/scenarios';
import { runScenario, type ReceiptMode } from '../../bench/guard/simulate';
import { BASE_MODEL, RECEIPT_MS, type PlannedSend } from '../../bench/guard/traffic';
import { UNITS_PER_USD } from '../../functions/core/money';
import { ROUTES } from '../../functions/core/routing';

const gb = (n: number) => `+4477009${String(n).padStart(5, '0')}`;

/**
 * Three users: one checks (and had checked a code before), one never does, one is refused; the outage's receipt
 * comes 30 minutes late.
 */
const PLANS: PlannedSend[] = [
  // A returning user: its earlier visit is stored before the run.
  {
    at: 1_000,
    to: gb(1),
    country: 'GB',
    group: 'legit',
    checks: [{ afterMs: 20_000 }],
    verifiedAt: -3_600_000,
  },
  { at: 2_000, to: gb(2), country: 'GB', group: 'legit' },
  { at: 3_000, to: gb(3), country: 'GB', group: 'attack' },
  { at: 4_000, to: gb(4), country: 'GB', group: 'legit', receiptAfterMs: 1_800_000 },
];

const scenario: Scenario = {
  name: 'receipts',
  kind: 'attack',
  title: 'receipts',
  model: BASE_MODEL,
  warm: false,
  from: 0,
  to: 60_000,
  traffic: () => PLANS,
};

async function replay(receipts: ReceiptMode, changes: Partial<Scenario> = {}) {
  const calls: string[] = [];
  const bench: GuardBench = {
    serviceSid: 'VA1',
    send: (at, to): Promise<SendOutcome> => {
      calls.push(`send ${at} ${to}`);
      return Promise.resolve(
        to === gb(3) ? { ok: false, code: 'blocked_by_policy' } : { ok: true, sid: `sid-${to}` },
      );
    },
    check: (at, sid) => Promise.resolve(void calls.push(`check ${at} ${sid}`)),
    deliver: (at, sid) => Promise.resolve(void calls.push(`deliver ${at} ${sid}`)),
    consume: (at) => Promise.resolve((calls.push(`consume ${at}`), { decisions: [], drops: [] })),
    foldHistory: () => Promise.resolve(),
    seedVerified: (at, to) => Promise.resolve(void calls.push(`seed ${at} ${to}`)),
    close: () => Promise.resolve(),
    requests: () => 0,
  };
  const result = await runScenario(
    { ...scenario, ...changes },
    1,
    () => Promise.resolve(bench),
    undefined,
    receipts,
  );
  return { calls, result };
}

test('receipts come for every accepted send at its planned time; one batch per batching window', async () => {
  const { calls, result } = await replay('prompt');
  expect(calls.filter((c) => c.startsWith('deliver'))).toEqual([
    `deliver ${1_000 + RECEIPT_MS} sid-${gb(1)}`,
    `deliver ${2_000 + RECEIPT_MS} sid-${gb(2)}`,
    `deliver ${4_000 + 1_800_000} sid-${gb(4)}`,
  ]);
  // One batch per batching window, the receipts and the check the window's sends led to included; the late
  // receipt's window is replayed too.
  expect(calls.filter((c) => c.startsWith('consume'))).toEqual(['consume 30000', 'consume 1830000']);
  expect(calls.indexOf('consume 30000')).toBe(calls.indexOf(`check 21000 sid-${gb(1)}`) + 1);
  expect(calls.indexOf(`deliver 1804000 sid-${gb(4)}`)).toBe(calls.length - 2);
  expect(result.attack).toMatchObject({ sends: 1, blocked: 1 });
});

test('--receipts none: no receipt at all, the rest of the replay unchanged', async () => {
  const prompt = await replay('prompt');
  const none = await replay('none');
  expect(none.calls.filter((c) => c.startsWith('deliver'))).toEqual([]);
  expect(none.calls.filter((c) => !c.startsWith('consume'))).toEqual(
    prompt.calls.filter((c) => !c.startsWith('deliver') && !c.startsWith('consume')),
  );
  expect(none.result.legit).toEqual(prompt.result.legit);
});

test("a returning user's earlier visit is stored once, before the run's first send", async () => {
  const { calls } = await replay('prompt');
  expect(calls.filter((c) => c.startsWith('seed'))).toEqual([`seed -3600000 ${gb(1)}`]);
  expect(calls[0]).toBe(`seed -3600000 ${gb(1)}`);
});

test('a pausing attacker makes no send while paused; its unguarded cost counts every planned send', async () => {
  const gbPrice = (ROUTES.GB?.price ?? 0) / UNITS_PER_USD;
  expect(gbPrice).toBeGreaterThan(0);
  const attack = (at: number, n: number): PlannedSend => ({ at, to: gb(n), country: 'GB', group: 'attack' });
  // Accepted, refused (gb(3)), then two sends inside the pause and one after it.
  const traffic = () => [
    attack(500, 5),
    attack(3_000, 3),
    attack(5_000, 6),
    attack(9_000, 7),
    attack(50_000, 8),
  ];
  const { calls, result } = await replay('prompt', { traffic, pauseOnBlockMs: 40_000 });
  expect(calls.filter((c) => c.startsWith('send'))).toEqual([
    `send 500 ${gb(5)}`,
    `send 3000 ${gb(3)}`,
    `send 50000 ${gb(8)}`,
  ]);
  expect(result.attack).toMatchObject({ sends: 3, blocked: 1 });
  expect(result.attack.charged).toBeCloseTo(2 * gbPrice, 9);
  expect(result.attackPlanned.sends).toBe(5);
  expect(result.attackPlanned.cost).toBeCloseTo(5 * gbPrice, 9);

  // Without the pause the same plan makes every send; refused ones are still uncharged.
  const unpaused = await replay('prompt', { traffic });
  expect(unpaused.result.attack).toMatchObject({ sends: 5, blocked: 1 });
  expect(unpaused.result.attackPlanned).toEqual(result.attackPlanned);
});
