/**
 * One run's attack as it went (`npm run bench:guard -- --trace --scenarios NAME --seeds N`): why a figure is what
 * it is. Each attack send (accepted, or refused and by which rule) and each of its codes checked, in time order;
 * then what the evidence had to go on: the share of its codes the attacker checks, and the sends to ranges the
 * service had not established when the window opened, the attack's and its real users' (with the share of those
 * real users who check). Memory only, in this process.
 */
import { countryKey } from '../../functions/core/guard/consumer';
import { placeOf } from '../../functions/core/guard/prefix';
import { memoryBench, type GuardBench, type GuardSnapshot } from './backend';
import type { Scenario } from './scenarios';
import { runScenario, type ReceiptMode, type RunResult } from './simulate';
import type { PlannedSend } from './traffic';

/** Sends, and of them those to ranges not established for the service when the window opened. */
interface TraceCounts {
  sends: number;
  /** Sends planned with a check of their code (a real user who types it, an attacker's fake check). */
  checking: number;
  novel: number;
  novelChecking: number;
}

export interface AttackTrace {
  result: RunResult;
  /** Attack sends, refusals and checks, in time order. */
  events: TraceEvent[];
  attack: TraceCounts;
  /** The legitimate sends of the window (the focus users' included). */
  legit: TraceCounts;
}

interface TraceEvent {
  /** Milliseconds from the window's start. */
  at: number;
  kind: 'accepted' | 'refused' | 'check';
  to: string;
  /**
   * A refusal's guard rule; `allow-list` for `blocked_by_policy` without a guard decision (the service's delivery
   * rules); else the code it was refused with.
   */
  reason?: string;
}

const counts = (): TraceCounts => ({ sends: 0, checking: 0, novel: 0, novelChecking: 0 });

export async function traceRun(
  scenario: Scenario,
  seed: number,
  level: 'standard' | 'strict',
  receipts: ReceiptMode,
): Promise<AttackTrace> {
  const plans = scenario.traffic(seed).filter((p) => p.at >= scenario.from && p.at < scenario.to);
  const attackNumbers = new Set(plans.filter((p) => p.group === 'attack').map((p) => p.to));
  const events: TraceEvent[] = [];
  // A refusal's rule comes with the consumer's next batch: the earliest refusal of the number not yet named.
  const unnamed = new Map<string, TraceEvent[]>();
  const numberOf = new Map<string, string>();
  let opened: GuardSnapshot | undefined;
  let serviceSid = '';

  const traced = (bench: GuardBench): GuardBench => {
    serviceSid = bench.serviceSid;
    const { send, check, consume } = bench;
    return {
      ...bench,
      send: async (at, to, callerCode) => {
        // The first send of the window sees the guard as the window found it (the warm-up folded, nothing else).
        opened ??= bench.snapshot?.() ?? { countries: new Map(), scopes: new Map() };
        const outcome = await send.call(bench, at, to, callerCode);
        if (outcome.ok) numberOf.set(outcome.sid, to);
        if (!attackNumbers.has(to)) return outcome;
        const event: TraceEvent = { at: at - scenario.from, kind: outcome.ok ? 'accepted' : 'refused', to };
        if (!outcome.ok && outcome.code !== 'blocked_by_policy') event.reason = outcome.code;
        if (!outcome.ok && outcome.code === 'blocked_by_policy')
          unnamed.set(to, [...(unnamed.get(to) ?? []), event]);
        events.push(event);
        return outcome;
      },
      check: async (at, sid, wrong) => {
        await check.call(bench, at, sid, wrong);
        const to = numberOf.get(sid);
        if (to && attackNumbers.has(to)) events.push({ at: at - scenario.from, kind: 'check', to });
      },
      consume: async (at) => {
        const consumed = await consume.call(bench, at);
        for (const decision of consumed.decisions) {
          const event = unnamed.get(decision.e164)?.shift();
          if (event) event.reason = decision.reason;
        }
        return consumed;
      },
    };
  };

  const result = await runScenario(
    scenario,
    seed,
    (s, guardState) =>
      Promise.resolve(
        traced(
          memoryBench({
            level,
            ...(s.allowedCountries && { allowedCountries: s.allowedCountries }),
            ...(guardState && { guardState }),
          }),
        ),
      ),
    undefined,
    receipts,
  );

  const established = (plan: PlannedSend) =>
    opened?.countries
      .get(countryKey(serviceSid, plan.country))
      ?.state.established.includes(placeOf(plan.to, plan.country).range) ?? false;
  const attack = counts();
  const legit = counts();
  for (const plan of plans) {
    const tally = plan.group === 'attack' ? attack : legit;
    const checking = (plan.checks?.length ?? 0) > 0;
    const novel = !established(plan);
    tally.sends++;
    if (checking) tally.checking++;
    if (novel) tally.novel++;
    if (novel && checking) tally.novelChecking++;
  }
  for (const event of [...unnamed.values()].flat()) event.reason = 'allow-list';
  events.sort((a, b) => a.at - b.at);
  return { result, events, attack, legit };
}

const share = (part: number, whole: number) => (whole > 0 ? `${((100 * part) / whole).toFixed(1)} %` : '-');

export function formatTrace(scenario: Scenario, seed: number, trace: AttackTrace): string {
  const { result, attack, legit } = trace;
  const lines = trace.events.map(
    (e) =>
      `${(e.at / 60_000).toFixed(2).padStart(7)} min  ${e.kind.padEnd(8)} ${e.to}${e.reason ? `  ${e.reason}` : ''}`,
  );
  const refused = result.attack.blocked;
  return [
    `${scenario.name} seed ${seed}: ${scenario.title}`,
    ...lines,
    `Attack: ${attack.sends} planned sends, ${result.attack.sends} made, ${refused} refused (${share(refused, result.attack.sends)}), $${result.attack.charged.toFixed(2)} of $${result.attackPlanned.cost.toFixed(2)} unguarded.`,
    `  Planned with a check of their code: ${attack.checking} (${share(attack.checking, attack.sends)}).`,
    `  To ranges not established when the window opened: ${attack.novel} (${share(attack.novel, attack.sends)}).`,
    `Legitimate: ${legit.sends} planned sends, ${result.legit.blocked} refused; to ranges not established: ${legit.novel} (${share(legit.novel, legit.sends)}), of which ${share(legit.novelChecking, legit.novel)} checked.`,
    `Decisions: ${JSON.stringify(result.reasons)}`,
  ].join('\n');
}
