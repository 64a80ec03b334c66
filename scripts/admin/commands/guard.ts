/**
 * `guard report|level|safelist add|safelist remove|risk-check allow|risk-check deny|unblock`: the pumping guard of
 * one service (docs/guard.md). Level, safe list and the RiskCheck permission live on the service item (read by
 * every send at no extra cost); blocks are made by the guard's stream consumer and lifted by time or by
 * `guard unblock`.
 */
import { GUARD_LEVELS, isGuardLevel, type GuardLevel } from '../../../functions/core/guard/model';
import { LIFT_MS, blocksInForce, conversionDrops } from '../../../functions/core/guard/status';
import { list, rows, table, usd } from '../format';
import * as parse from '../validate';
import { AdminError, UsageError, command, type Command, type CommandContext } from '../framework';
import { VA, editFreshCopy, loadService, sidOnly } from './common';

const UNBLOCK_HOURS = LIFT_MS / 3_600_000;

const iso = (ms: number) => new Date(ms).toISOString();

async function overview(context: CommandContext, sid: string) {
  const service = await loadService(context, sid);
  const found = await context.guard.overview(sid);
  if (!found) throw new AdminError(`No service ${sid} in ${context.targetDescription}`);
  return { ...found, riskCheckOptOut: service.guard?.riskCheckOptOut === true };
}

const guardReport = command({
  words: ['guard', 'report'],
  args: ['<VA>'],
  summary:
    'The pumping guard of a service: level, safe list, current blocks, conversion drops, decisions by prefix and reason',
  details: [
    'Blocked: refused with 403 blocked_by_policy, never charged. Shadow: the level is shadow; what it would have blocked.',
    'Saved: the prices of the blocked sends. Recent: the latest decisions with the figures that made them.',
  ],
  examples: [`guard report ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const found = await overview(context, sid);
    const blocks = blocksInForce(found, sid, Date.now());
    const drops = conversionDrops(found, Date.now());
    const lines = [...found.report.lines].sort((a, b) => b.sends - a.sends);
    const saved = lines.reduce((sum, line) => sum + line.saved, 0);
    const json = {
      serviceSid: sid,
      level: found.level ?? 'standard',
      safeList: found.safeList,
      riskCheckOptOut: found.riskCheckOptOut,
      blocks,
      conversionDrops: drops,
      decisions: lines,
      savedUnits: saved,
      recent: found.report.recent,
    };
    const text = [
      rows([
        ['Level', `${found.level ?? 'standard'}${found.level ? '' : ' (default)'}`],
        ['Safe list', list(found.safeList)],
        [
          'RiskCheck=disable',
          found.riskCheckOptOut ? 'honoured (guard risk-check allow)' : 'ignored (default)',
        ],
        ['Saved by blocks', usd(saved)],
      ]),
      '',
      blocks.length === 0
        ? 'No block now.'
        : table(
            ['Blocked', 'Reason', 'Level', 'Scope', 'Until', 'Lift with', 'Figures'],
            blocks.map((b) => [
              b.blocked,
              b.reason,
              b.level,
              b.applies ? b.scope : `${b.scope} (not applied)`,
              iso(b.until),
              b.liftWith,
              JSON.stringify(b.figures),
            ]),
          ),
      ...(drops.length === 0
        ? []
        : [
            '',
            table(
              ['Conversion drop', 'Told at', 'Figures'],
              drops.map((d) => [d.country, iso(d.since), JSON.stringify(d.figures)]),
            ),
          ]),
      '',
      lines.length === 0
        ? 'No decision recorded.'
        : table(
            ['Mode', 'Reason', 'Prefix', 'Sends', 'Saved'],
            lines.map((l) => [l.mode, l.reason, l.prefix, String(l.sends), usd(l.saved)]),
          ),
    ].join('\n');
    return { json, text };
  },
});

const guardLevel = command({
  words: ['guard', 'level'],
  args: ['<VA>', '<LEVEL>'],
  summary: `Set the guard's level: ${GUARD_LEVELS.join(', ')} (shadow decides and records, never blocks)`,
  examples: [`guard level ${VA} shadow`],
  parse: ([sid, level]) => {
    if (!isGuardLevel(level ?? ''))
      throw new UsageError(`"${level}" is not a level: ${GUARD_LEVELS.join(', ')}`);
    return { sid: parse.serviceSid(sid!), level: level as GuardLevel };
  },
  run: async (context, { sid, level }) => {
    await loadService(context, sid);
    await context.accounts.setGuardLevel(context.change, sid, level);
    return { json: { serviceSid: sid, level }, text: `Guard level of ${sid}: ${level}.` };
  },
});

function safeListEdit(add: boolean): Command {
  return command({
    words: ['guard', 'safelist', add ? 'add' : 'remove'],
    args: ['<VA>', '<+number-or-prefix>'],
    summary: add
      ? 'Never let the guard block a number or the numbers under a prefix'
      : 'Remove a number or prefix from the safe list',
    examples: [`guard safelist ${add ? 'add' : 'remove'} ${VA} +447400123456`],
    parse: ([sid, entry]) => ({ sid: parse.serviceSid(sid!), entry: parse.prefix(entry!) }),
    run: (context, { sid, entry }) =>
      editFreshCopy(context, sid, async (service) => {
        const current = service.guard?.safeList ?? [];
        const next = add
          ? [...current.filter((e) => e !== entry), entry]
          : current.filter((e) => e !== entry);
        const changed = next.length !== current.length || (add && !current.includes(entry));
        if (changed)
          await context.accounts.setGuardSafeList(context.change, sid, next, service.guardVersion ?? 0);
        return {
          json: { serviceSid: sid, changed, safeList: next },
          text: `${changed ? 'Safe list changed' : 'Nothing changed'}. Safe list: ${list(next)}`,
        };
      }),
  });
}

function riskCheckEdit(allow: boolean): Command {
  return command({
    words: ['guard', 'risk-check', allow ? 'allow' : 'deny'],
    args: ['<VA>'],
    summary: allow
      ? "Let a send's RiskCheck=disable skip the guard for this service"
      : 'Judge every send, RiskCheck=disable or not (the default)',
    details: [
      'Without the permission a send with RiskCheck=disable is judged as if RiskCheck were absent; its answer is unchanged.',
    ],
    examples: [`guard risk-check ${allow ? 'allow' : 'deny'} ${VA}`],
    parse: sidOnly,
    run: async (context, sid) => {
      await loadService(context, sid);
      await context.accounts.setRiskCheckOptOut(context.change, sid, allow);
      return {
        json: { serviceSid: sid, riskCheckOptOut: allow },
        text: allow
          ? `RiskCheck=disable now skips the guard for ${sid}.`
          : `RiskCheck=disable is ignored for ${sid}: every send is judged.`,
      };
    },
  });
}

const guardUnblock = command({
  words: ['guard', 'unblock'],
  args: ['<VA>', '<+prefix|*>'],
  summary: `Lift the guard's blocks of a prefix (or all, with *) for ${UNBLOCK_HOURS} h`,
  details: [
    "Lifts every block of the service inside or around the prefix; a country prefix (+62) also lifts that country's block of ranges not established, * every block.",
    `For ${UNBLOCK_HOURS} hour the rules do not block that prefix again; a global block (all services) there stays, but passes this service's sends.`,
  ],
  examples: [`guard unblock ${VA} +447400`, `guard unblock ${VA} '*'`],
  parse: ([sid, prefix]) => ({
    sid: parse.serviceSid(sid!),
    prefix: prefix === '*' ? '*' : parse.prefix(prefix!),
  }),
  run: async (context, { sid, prefix }) => {
    await loadService(context, sid);
    const until = new Date(Date.now() + LIFT_MS);
    // The lift and its audit record in one write.
    const lifted = await context.guard.unblock(sid, prefix, until, (count) =>
      context.accounts.changeRecord(context.change, sid, 'guard.unblock', undefined, {
        prefix,
        lifted: count,
        until: until.toISOString(),
      }),
    );
    return {
      json: { serviceSid: sid, prefix, lifted, liftedUntil: until.toISOString() },
      text: `${lifted} block(s) lifted; ${prefix} stays unblocked until ${until.toISOString()}.`,
    };
  },
});

export const guardCommands: readonly Command[] = [
  guardReport,
  guardLevel,
  safeListEdit(true),
  safeListEdit(false),
  riskCheckEdit(true),
  riskCheckEdit(false),
  guardUnblock,
];
