/**
 * `guard caps|cap set|cap clear`: the owner's per-country send and spend caps (docs/guard.md, "Caps"), kept on
 * the service item (`guard_caps`) and read by the guard's consumer, which refuses a country's sends once one is
 * reached, until the end of the hour or day.
 */
import {
  ANY_COUNTRY,
  CAP_FIELDS,
  CAP_NAMES,
  capCountries,
  capProblem,
  isSpendCap,
  type CapField,
} from '../../../functions/core/guard/caps';
import type { CountryCaps } from '../../../functions/core/guard/model';
import { formatUnits } from '../../../functions/core/money';
import type { CapBlock } from '../../../functions/adapters/dynamodb/guard';
import { table, usd } from '../format';
import * as parse from '../validate';
import { UsageError, command, type Command, type CommandContext, type OptionName } from '../framework';
import { VA, loadService, sidOnly } from './common';

const OPTION: Record<CapField, OptionName> = {
  hourlySends: 'hourly-sends',
  dailySends: 'daily-sends',
  hourlySpend: 'hourly-spend',
  dailySpend: 'daily-spend',
};

const capValue = (field: CapField, value: number | undefined): string | number | null =>
  value === undefined ? null : isSpendCap(field) ? formatUnits(value) : value;

const capText = (field: CapField, value: number | undefined): string =>
  value === undefined ? '-' : isSpendCap(field) ? usd(value) : String(value);

const capsJson = (caps: Record<string, CountryCaps> | undefined) =>
  capCountries(caps).map((country) => ({
    country,
    ...Object.fromEntries(CAP_FIELDS.map((field) => [field, capValue(field, caps![country]![field])])),
  }));

const reachedJson = (reached: CapBlock[]) =>
  reached.map((r) => ({
    country: r.country,
    cap: r.cap,
    limit: r.spend ? formatUnits(r.limit) : r.limit,
    value: r.spend ? formatUnits(r.value) : r.value,
    since: new Date(r.since).toISOString(),
    until: new Date(r.until).toISOString(),
  }));

async function capsOutput(
  context: CommandContext,
  sid: string,
  caps: Record<string, CountryCaps> | undefined,
  note?: string,
) {
  const reached = await context.guard.capsReached(sid, new Date());
  const text = [
    ...(note ? [note] : []),
    capCountries(caps).length === 0
      ? 'No caps (every country sends without a cap).'
      : table(
          ['Country', ...CAP_FIELDS.map((field) => CAP_NAMES[field])],
          capCountries(caps).map((country) => [
            country === ANY_COUNTRY ? '* (others)' : country,
            ...CAP_FIELDS.map((field) => capText(field, caps![country]![field])),
          ]),
        ),
    reached.length === 0
      ? 'No cap reached now.'
      : [
          'Reached now (sends refused, 403 blocked_by_policy):',
          ...reached.map(
            (r) =>
              `  ${r.country} ${r.cap}: ${r.spend ? usd(r.value) : r.value} of ${r.spend ? usd(r.limit) : r.limit}, until ${new Date(r.until).toISOString()}`,
          ),
        ].join('\n'),
  ].join('\n');
  return { json: { serviceSid: sid, caps: capsJson(caps), reached: reachedJson(reached) }, text };
}

/** A cap's country: a served country, or `*` for every country without its own. */
const capCountry = (text: string): string => (text === ANY_COUNTRY ? ANY_COUNTRY : parse.servedCountry(text));

function capOption(field: CapField, text: string): number | undefined {
  if (text === 'off') return undefined;
  const value = isSpendCap(field)
    ? parse.usd(text, `--${OPTION[field]}`)
    : /^\d{1,12}$/.test(text)
      ? Number(text)
      : NaN;
  const problem = capProblem(field, value);
  if (problem) throw new UsageError(`--${OPTION[field]} "${text}": ${problem}, or off`);
  return value;
}

const capsShow = command({
  words: ['guard', 'caps'],
  args: ['<VA>'],
  summary: "Show the service's per-country send and spend caps, and the caps reached now",
  examples: [`guard caps ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    return capsOutput(context, sid, service.guard?.caps);
  },
});

const capSet = command({
  words: ['guard', 'cap', 'set'],
  args: ['<VA>', '<CC|*>'],
  options: ['hourly-sends', 'daily-sends', 'hourly-spend', 'daily-spend'],
  optionsUsage: '[--hourly-sends N] [--daily-sends N] [--hourly-spend USD] [--daily-spend USD]',
  summary: "Cap a country's accepted sends or spend per hour or day (* : every country without its own)",
  details: [
    'Sends past a cap are refused with 403 blocked_by_policy until the end of the hour or day (UTC).',
    "The guard's consumer counts the sends: a cap acts a few seconds after it is reached.",
    'Caps not named are kept; give off to remove one. A cap reached already keeps refusing until its end',
    '(guard unblock VA +<country code> lifts it now).',
  ],
  examples: [
    `guard cap set ${VA} GB --hourly-sends 500 --daily-spend 200`,
    `guard cap set ${VA} '*' --daily-sends 1000`,
    `guard cap set ${VA} GB --hourly-sends off`,
  ],
  parse: ([sid, country], values) => {
    const changes = new Map<CapField, number | undefined>();
    for (const field of CAP_FIELDS) {
      const text = values[OPTION[field]];
      if (typeof text === 'string') changes.set(field, capOption(field, text));
    }
    if (changes.size === 0)
      throw new UsageError(
        'Give at least one cap: --hourly-sends, --daily-sends, --hourly-spend, --daily-spend',
      );
    return { sid: parse.serviceSid(sid!), country: capCountry(country!), changes };
  },
  run: async (context, { sid, country, changes }) => {
    await loadService(context, sid);
    // The caps not named are kept: the change starts from the country's caps as they are when written.
    const caps = await context.accounts.changeCountryCaps(context.change, sid, country, (current) => {
      const entry: CountryCaps = { ...current };
      for (const [field, value] of changes) {
        if (value === undefined) delete entry[field];
        else entry[field] = value;
      }
      return entry;
    });
    return capsOutput(context, sid, caps, `Caps of ${country} set.`);
  },
});

const capClear = command({
  words: ['guard', 'cap', 'clear'],
  args: ['<VA>', '<CC|*>'],
  summary: 'Remove every cap of a country (or the * default)',
  details: [
    'A cap reached already keeps refusing until the end of its hour or day: guard unblock VA +<country code> lifts it now.',
  ],
  examples: [`guard cap clear ${VA} GB`],
  parse: ([sid, country]) => ({ sid: parse.serviceSid(sid!), country: capCountry(country!) }),
  run: async (context, { sid, country }) => {
    const service = await loadService(context, sid);
    const had = service.guard?.caps?.[country] !== undefined;
    const caps = had
      ? await context.accounts.changeCountryCaps(context.change, sid, country, () => undefined)
      : service.guard?.caps;
    return capsOutput(
      context,
      sid,
      caps,
      had ? `Caps of ${country} removed.` : `${country} had no caps; nothing changed.`,
    );
  },
});

export const capsCommands: readonly Command[] = [capsShow, capSet, capClear];
