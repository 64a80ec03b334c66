/**
 * `rules show|block-country|unblock-country|block-prefix|unblock-prefix|clear` and the country allow-list
 * (`allow-country|disallow-country|set-allowed|reset-allowed|allow-all`): the delivery rules.
 */
import { defaultAllowedCountries, servedCountries } from '../../../functions/core/guard/high-risk-countries';
import type { Service } from '../../../functions/core/model';
import { allowedText, excludedJson, excludedText, list, rows } from '../format';
import * as parse from '../validate';
import { command, type Command, type CommandContext } from '../framework';
import { VA, editFreshCopy, loadService, sidOnly } from './common';

type Rules = Service['rules'];
type BlockLists = 'blockedCountries' | 'blockedPrefixes';

const rulesJson = (sid: string, rules: Rules, changed?: boolean) => ({
  serviceSid: sid,
  ...(changed !== undefined && { changed }),
  blockedCountries: rules.blockedCountries,
  blockedPrefixes: rules.blockedPrefixes,
  /** null: no allow-list, every served country. */
  allowedCountries: rules.allowedCountries ?? null,
  excludedHighRiskCountries: excludedJson(rules),
});

const rulesText = (rules: Rules) =>
  rows([
    ['Blocked countries', list(rules.blockedCountries)],
    ['Blocked prefixes', list(rules.blockedPrefixes)],
    ['Allowed countries', allowedText(rules)],
    ['High risk left out', excludedText(rules)],
  ]);

/**
 * One entry added to or removed from a rule list. Read-modify-write of the whole lists: fine for an
 * operator's command, though two operators editing the same service at once could lose an edit.
 */
function ruleEdit(options: {
  action: string;
  argument: string;
  summary: string;
  example: string;
  list: BlockLists;
  add: boolean;
  parseEntry: (text: string) => string;
}): Command {
  return command({
    words: ['rules', options.action],
    args: ['<VA>', options.argument],
    summary: options.summary,
    examples: [options.example],
    parse: ([sid, entry]) => ({ sid: parse.serviceSid(sid!), entry: options.parseEntry(entry!) }),
    run: (context, { sid, entry }) =>
      editFreshCopy(context, sid, async ({ rules, rulesVersion }) => {
        const current = rules[options.list];
        const present = current.includes(entry);
        const changed = options.add !== present;
        const next: Rules = {
          ...rules,
          [options.list]: options.add
            ? [...current.filter((e) => e !== entry), entry]
            : current.filter((e) => e !== entry),
        };
        if (changed)
          await context.accounts.setRules(
            context.change,
            sid,
            { [options.list]: next[options.list] },
            rulesVersion ?? 0,
          );
        const verb = options.add ? 'blocked' : 'unblocked';
        const note = changed ? `${entry} ${verb}.` : `${entry} was already ${verb}; nothing changed.`;
        return { json: rulesJson(sid, next, changed), text: `${note}\n${rulesText(next)}` };
      }),
  });
}

const rulesShow = command({
  words: ['rules', 'show'],
  args: ['<VA>'],
  summary: 'Show the delivery rules (blocked countries and prefixes, the country allow-list)',
  examples: [`rules show ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const { rules } = await loadService(context, sid);
    return { json: rulesJson(sid, rules), text: rulesText(rules) };
  },
});

const rulesClear = command({
  words: ['rules', 'clear'],
  args: ['<VA>'],
  summary: 'Remove every blocked country and prefix (the country allow-list stays)',
  examples: [`rules clear ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    const rules: Rules = { ...service.rules, blockedCountries: [], blockedPrefixes: [] };
    await context.accounts.setRules(context.change, sid, { blockedCountries: [], blockedPrefixes: [] });
    return {
      json: rulesJson(sid, rules, true),
      text: `Blocked countries and prefixes cleared; the allow-list is unchanged.\n${rulesText(rules)}`,
    };
  },
});

/** A new allow-list (undefined: none, every served country) written if it differs from the current one. */
async function writeAllowed(
  context: CommandContext,
  sid: string,
  rules: Rules,
  next: string[] | undefined,
  note: (changed: boolean) => string,
  /** The version of the rules `next` was made from, when it was made from them (one country added or taken off). */
  rulesVersion?: number,
) {
  const sorted = next && [...new Set(next)].sort();
  const same = (a?: string[], b?: string[]) =>
    a === undefined || b === undefined ? a === b : a.length === b.length && a.every((c, i) => c === b[i]);
  const changed = !same(rules.allowedCountries && [...rules.allowedCountries].sort(), sorted);
  if (changed)
    await context.accounts.setRules(context.change, sid, { allowedCountries: sorted ?? null }, rulesVersion);
  const after: Rules = {
    blockedCountries: rules.blockedCountries,
    blockedPrefixes: rules.blockedPrefixes,
    ...(sorted && { allowedCountries: sorted }),
  };
  return { json: rulesJson(sid, after, changed), text: `${note(changed)}\n${rulesText(after)}` };
}

function allowEdit(add: boolean): Command {
  return command({
    words: ['rules', add ? 'allow-country' : 'disallow-country'],
    args: ['<VA>', '<CC>'],
    summary: add
      ? 'Add a served country to the allow-list'
      : 'Take a country off the allow-list: its sends are refused (403 blocked_by_policy)',
    details: add
      ? ['Without an allow-list the service already sends to every served country: nothing changes.']
      : ['Without an allow-list, one is made: every served country but this one.'],
    examples: [`rules ${add ? 'allow-country' : 'disallow-country'} ${VA} NG`],
    parse: ([sid, entry]) => ({ sid: parse.serviceSid(sid!), entry: parse.servedCountry(entry!) }),
    run: (context, { sid, entry }) =>
      editFreshCopy(context, sid, ({ rules, rulesVersion }) => {
        const current = rules.allowedCountries;
        if (add && current === undefined)
          return writeAllowed(
            context,
            sid,
            rules,
            undefined,
            () => `${entry}: no allow-list, already allowed.`,
          );
        const base = current ?? servedCountries();
        const next = add ? [...base, entry] : base.filter((c) => c !== entry);
        return writeAllowed(
          context,
          sid,
          rules,
          next,
          (changed) =>
            changed
              ? `${entry} ${add ? 'added to' : 'taken off'} the allow-list.`
              : `${entry} was already ${add ? 'on' : 'off'} the allow-list; nothing changed.`,
          rulesVersion ?? 0,
        );
      }),
  });
}

const setAllowed = command({
  words: ['rules', 'set-allowed'],
  args: ['<VA>', '<CC,CC,...>'],
  summary: 'Replace the allow-list: the service sends only to these served countries',
  details: ['Give - for an empty list (the service sends nowhere).'],
  examples: [`rules set-allowed ${VA} GB,FR,DE`],
  parse: ([sid, text]) => ({
    sid: parse.serviceSid(sid!),
    countries:
      text === '-'
        ? []
        : text!
            .split(',')
            .map((c) => c.trim())
            .filter((c) => c !== '')
            .map(parse.servedCountry),
  }),
  run: async (context, { sid, countries }) => {
    const { rules } = await loadService(context, sid);
    return writeAllowed(context, sid, rules, countries, (changed) =>
      changed ? 'Allow-list replaced.' : 'Allow-list unchanged.',
    );
  },
});

const resetAllowed = command({
  words: ['rules', 'reset-allowed'],
  args: ['<VA>'],
  summary: "Set the allow-list to a new service's default: every served country but the high-risk ones",
  examples: [`rules reset-allowed ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const { rules } = await loadService(context, sid);
    return writeAllowed(context, sid, rules, defaultAllowedCountries(), (changed) =>
      changed ? 'Allow-list reset to the default.' : 'The allow-list already is the default.',
    );
  },
});

const allowAll = command({
  words: ['rules', 'allow-all'],
  args: ['<VA>'],
  summary: 'Remove the allow-list: the service sends to every served country, high-risk ones included',
  examples: [`rules allow-all ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const { rules } = await loadService(context, sid);
    return writeAllowed(context, sid, rules, undefined, (changed) =>
      changed ? 'Allow-list removed: every served country.' : 'No allow-list; nothing changed.',
    );
  },
});

export const rulesCommands: readonly Command[] = [
  rulesShow,
  ruleEdit({
    action: 'block-country',
    argument: '<CC>',
    summary: 'Refuse sends to a country (403 blocked_by_policy)',
    example: `rules block-country ${VA} GB`,
    list: 'blockedCountries',
    add: true,
    parseEntry: parse.servedCountry,
  }),
  ruleEdit({
    action: 'unblock-country',
    argument: '<CC>',
    summary: 'Remove a blocked country',
    example: `rules unblock-country ${VA} GB`,
    list: 'blockedCountries',
    add: false,
    parseEntry: parse.country,
  }),
  ruleEdit({
    action: 'block-prefix',
    argument: '<+prefix>',
    summary: 'Refuse sends to numbers starting with +digits (403 blocked_by_policy)',
    example: `rules block-prefix ${VA} +4470`,
    list: 'blockedPrefixes',
    add: true,
    parseEntry: parse.prefix,
  }),
  ruleEdit({
    action: 'unblock-prefix',
    argument: '<+prefix>',
    summary: 'Remove a blocked prefix',
    example: `rules unblock-prefix ${VA} +4470`,
    list: 'blockedPrefixes',
    add: false,
    parseEntry: parse.prefix,
  }),
  rulesClear,
  allowEdit(true),
  allowEdit(false),
  setAllowed,
  resetAllowed,
  allowAll,
];
