/** `rules show|block-country|unblock-country|block-prefix|unblock-prefix|clear`: the delivery rules. */
import type { Service } from '../../../functions/core/model';
import { list, rows } from '../format';
import * as parse from '../validate';
import { command, type Command } from '../framework';
import { VA, loadService, sidOnly } from './common';

type Rules = Service['rules'];

const rulesJson = (sid: string, rules: Rules, changed?: boolean) => ({
  serviceSid: sid,
  ...(changed !== undefined && { changed }),
  blockedCountries: rules.blockedCountries,
  blockedPrefixes: rules.blockedPrefixes,
});

const rulesText = (rules: Rules) =>
  rows([
    ['Blocked countries', list(rules.blockedCountries)],
    ['Blocked prefixes', list(rules.blockedPrefixes)],
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
  list: keyof Rules;
  add: boolean;
  parseEntry: (text: string) => string;
}): Command {
  return command({
    words: ['rules', options.action],
    args: ['<VA>', options.argument],
    summary: options.summary,
    examples: [options.example],
    parse: ([sid, entry]) => ({ sid: parse.serviceSid(sid!), entry: options.parseEntry(entry!) }),
    run: async (context, { sid, entry }) => {
      const { rules } = await loadService(context, sid);
      const current = rules[options.list];
      const present = current.includes(entry);
      const changed = options.add !== present;
      const next: Rules = {
        ...rules,
        [options.list]: options.add
          ? [...current.filter((e) => e !== entry), entry]
          : current.filter((e) => e !== entry),
      };
      if (changed) await context.accounts.setRules(sid, next);
      const verb = options.add ? 'blocked' : 'unblocked';
      const note = changed ? `${entry} ${verb}.` : `${entry} was already ${verb}; nothing changed.`;
      return { json: rulesJson(sid, next, changed), text: `${note}\n${rulesText(next)}` };
    },
  });
}

const rulesShow = command({
  words: ['rules', 'show'],
  args: ['<VA>'],
  summary: 'Show the delivery rules (blocked countries and prefixes)',
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
  summary: 'Remove every delivery rule',
  examples: [`rules clear ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const rules: Rules = { blockedCountries: [], blockedPrefixes: [] };
    await context.accounts.setRules(sid, rules);
    return { json: rulesJson(sid, rules, true), text: `Delivery rules cleared.\n${rulesText(rules)}` };
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
    parseEntry: parse.country,
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
];
