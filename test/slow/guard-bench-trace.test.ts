/**
 * `npm run bench:guard -- --trace` (bench/guard/trace.ts): one run's attack send by send, and what its evidence had
 * to go on. Its lines must add up to the run's own figures, and its counts must match the scenario's plan.
 */
import { scenarioByName } from '../../bench/guard/scenarios';
import { formatTrace, traceRun } from '../../bench/guard/trace';

describe('guard bench trace', () => {
  jest.setTimeout(120_000);

  it("names the rule of every refused attack send, and its lines add up to the run's figures", async () => {
    const scenario = scenarioByName('c_drip_25');
    const seed = 101;
    const trace = await traceRun(scenario, seed, 'standard', 'prompt');
    const { result, events } = trace;
    const refused = events.filter((e) => e.kind === 'refused');
    const accepted = events.filter((e) => e.kind === 'accepted');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused).toHaveLength(result.attack.blocked);
    expect(accepted).toHaveLength(result.attack.sends - result.attack.blocked);
    // The rule of each refusal, as the run counted them by reason.
    const byReason: Record<string, number> = {};
    for (const e of refused) byReason[`attack ${e.reason}`] = (byReason[`attack ${e.reason}`] ?? 0) + 1;
    const attackReasons = Object.fromEntries(
      Object.entries(result.reasons).filter(([key]) => key.startsWith('attack ')),
    );
    expect(byReason).toEqual(attackReasons);
    // Checks only of accepted sends, after them, in time order.
    const acceptedNumbers = new Set(accepted.map((e) => e.to));
    const checks = events.filter((e) => e.kind === 'check');
    expect(checks.length).toBeGreaterThan(0);
    for (const check of checks) {
      expect(acceptedNumbers.has(check.to)).toBe(true);
      expect(check.at).toBeGreaterThan(accepted.find((e) => e.to === check.to)!.at);
    }
    expect(events.map((e) => e.at)).toEqual([...events.map((e) => e.at)].sort((a, b) => a - b));

    // The attacker's checks as the scenario planned them, not as a share rounded to its name.
    const planned = scenario
      .traffic(seed)
      .filter((p) => p.group === 'attack' && p.at >= scenario.from && p.at < scenario.to);
    expect(trace.attack.sends).toBe(planned.length);
    expect(trace.attack.checking).toBe(planned.filter((p) => p.checks?.length).length);
    // A warm service has established ranges: some real users land in them, some do not.
    expect(trace.legit.novel).toBeGreaterThan(0);
    expect(trace.legit.novel).toBeLessThan(trace.legit.sends);
    expect(trace.legit.novelChecking).toBeLessThanOrEqual(trace.legit.novel);

    const text = formatTrace(scenario, seed, trace);
    expect(text.split('\n').filter((line) => / refused {2}\+/.test(line))).toHaveLength(refused.length);
    expect(text).toContain(`Planned with a check of their code: ${trace.attack.checking} (`);
  });

  it('on a new service every range is new, and refusals by the allow-list are named so', async () => {
    const fresh = await traceRun(scenarioByName('new_sequential'), 101, 'standard', 'prompt');
    expect(fresh.attack.novel).toBe(fresh.attack.sends);
    expect(fresh.legit.novel).toBe(fresh.legit.sends);
    expect(new Set(fresh.events.filter((e) => e.kind === 'refused').map((e) => e.reason))).toEqual(
      new Set(['sequential_numbers']),
    );

    // (d): sends outside the allow-list are refused before the guard judges them.
    const spread = await traceRun(scenarioByName('d_spread'), 101, 'standard', 'prompt');
    const outside = spread.result.tags.outside!;
    expect(outside.blocked).toBeGreaterThan(0);
    expect(spread.events.filter((e) => e.reason === 'allow-list')).toHaveLength(outside.blocked);
  });
});
