/** `audit`, `operator add|remove|list`: the audit trail of account changes, and who may act on every service. */
import { auditChangeInUsd } from '../../../functions/core/accounts/formats';
import { OPERATORS_AUDIT_SCOPE, type AuditRecord } from '../../../functions/core/accounts/ports';
import { table } from '../format';
import * as parse from '../validate';
import { UsageError, command, type Command } from '../framework';
import { VA } from './common';

const DEFAULT_RECORDS = 50;

const changeText = (value: unknown) => (value === undefined ? '' : JSON.stringify(value));

const auditTable = (records: AuditRecord[]) =>
  records.length === 0
    ? 'No changes recorded.'
    : table(
        ['Time', 'Actor', 'Action', 'Before', 'After'],
        records.map((r) => [r.at, r.actor, r.action, changeText(r.before), changeText(r.after)]),
      );

const audit = command({
  words: ['audit'],
  args: ['<VA|operators>'],
  summary:
    "List a service's changes, newest first: who, what, before and after (`operators`: operator rights)",
  examples: [`audit ${VA}`, 'audit operators --json'],
  parse: ([scope]) => (scope === 'operators' ? OPERATORS_AUDIT_SCOPE : parse.serviceSid(scope!)),
  run: async (context, scope) => {
    // Money as every other command gives it (USD strings), not in the units the records keep.
    const records = (await context.accounts.auditTrail(scope, DEFAULT_RECORDS)).map((record) => ({
      ...record,
      ...(record.before !== undefined && { before: auditChangeInUsd(record.before) }),
      ...(record.after !== undefined && { after: auditChangeInUsd(record.after) }),
    }));
    return { json: { scope, records }, text: auditTable(records) };
  },
});

/** A console user id as the sign-in token's `sub` carries it. */
function userId(text: string): string {
  if (!/^[A-Za-z0-9@._+:-]{1,128}$/.test(text)) {
    throw new UsageError(
      `"${text}" is not a console user id (the sign-in's subject, e.g. an e-mail address)`,
    );
  }
  return text;
}

const operatorEdit = (add: boolean): Command =>
  command({
    words: ['operator', add ? 'add' : 'remove'],
    args: ['<user>'],
    summary: add
      ? 'Give a console user operator rights (the user must also be in the sign-in group `operators`)'
      : "Take a user's operator rights away: the next console request is a member's",
    examples: [`operator ${add ? 'add' : 'remove'} ops@example.com`],
    parse: ([user]) => userId(user!),
    run: async (context, user) => {
      await context.accounts.setOperator(context.change, user, add);
      return {
        json: { userId: user, operator: add },
        text: add ? `${user} is an operator.` : `${user} is no longer an operator.`,
      };
    },
  });

const operatorList = command({
  words: ['operator', 'list'],
  args: [],
  summary: 'List the users with operator rights',
  examples: ['operator list'],
  parse: () => undefined,
  run: async (context) => {
    const operators = await context.accounts.store.listOperators();
    return {
      json: { operators },
      text: operators.length === 0 ? 'No operators.' : operators.sort().join('\n'),
    };
  },
});

export const auditCommands: readonly Command[] = [
  audit,
  operatorEdit(true),
  operatorEdit(false),
  operatorList,
];
