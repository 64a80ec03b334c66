/**
 * `balance show|topup|shards|audit|reconcile`, `charges`: the balance and the ledger (charge lines of sends, credit
 * lines of the opening balance and top-ups).
 */
import type { BalanceAudit } from '../../../functions/core/accounts/accounts';
import { MAX_BALANCE_SHARDS } from '../../../functions/core/accounts/formats';
import { formatUnits } from '../../../functions/core/money';
import { table, usd } from '../format';
import * as parse from '../validate';
import { command, type Command } from '../framework';
import { VA, loadService, sidOnly } from './common';

const balanceShow = command({
  words: ['balance', 'show'],
  args: ['<VA>'],
  summary: "Show a service's balance",
  examples: [`balance show ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    return {
      json: { serviceSid: sid, balance: formatUnits(service.balance), currency: 'USD' },
      text: `Balance of ${service.name}: ${usd(service.balance)}`,
    };
  },
});

const balanceTopUp = command({
  words: ['balance', 'topup'],
  args: ['<VA>', '<usd>'],
  options: ['key'],
  optionsUsage: '[--key KEY]',
  summary: 'Add USD (up to 4 decimals) to the balance',
  details: [
    'With --key (any string of yours, e.g. the payment id), running the command again after an error credits',
    'nothing more if the first one was credited: the same key and amount within 24 hours say so and answer the',
    'balance (--json: "added": "0.0000", "alreadyCredited": true).',
  ],
  examples: [
    `balance topup ${VA} 10`,
    `balance topup ${VA} 0.5`,
    `balance topup ${VA} 250 --key invoice-2041`,
  ],
  parse: ([sid, amount], values) => ({
    sid: parse.serviceSid(sid!),
    units: parse.usd(amount!, 'Top-up amount', { allowZero: false }),
    ...(values.key !== undefined && { key: values.key }),
  }),
  run: async (context, { sid, units, key }) => {
    await loadService(context, sid);
    const { balance, alreadyCredited } = await context.accounts.topUp(context.change, sid, units, key);
    const added = alreadyCredited ? 0 : units;
    return {
      json: {
        serviceSid: sid,
        added: formatUnits(added),
        alreadyCredited,
        balance: formatUnits(balance),
        currency: 'USD',
      },
      text: alreadyCredited
        ? `Key ${key} was used by an earlier top-up of ${usd(units)}: nothing added. Balance: ${usd(balance)}`
        : `Added ${usd(units)}. Balance: ${usd(balance)}`,
    };
  },
});

const charges = command({
  words: ['charges'],
  args: ['<VA>'],
  summary: 'List the charges (one per accepted send), oldest first, and their total',
  examples: [`charges ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const lines = (await context.accounts.listCharges(sid)).sort((a, b) => a.at.localeCompare(b.at));
    const total = lines.reduce((sum, line) => sum + line.amount, 0);
    return {
      json: {
        serviceSid: sid,
        count: lines.length,
        total: formatUnits(total),
        currency: 'USD',
        charges: lines.map((line) => ({ ...line, amount: formatUnits(line.amount) })),
      },
      text:
        lines.length === 0
          ? 'No charges.'
          : [
              table(
                ['Time', 'Verification', 'USD'],
                lines.map((line) => [line.at, line.verificationSid, formatUnits(line.amount)]),
              ),
              `${lines.length} charge${lines.length === 1 ? '' : 's'}, total ${usd(total)}`,
            ].join('\n'),
    };
  },
});

const auditJson = (audit: BalanceAudit) => ({
  serviceSid: audit.serviceSid,
  proven: audit.difference === 0,
  balance: formatUnits(audit.balance),
  credits: formatUnits(audit.credits),
  charges: formatUnits(audit.charges),
  difference: formatUnits(audit.difference),
  creditLines: audit.creditLines,
  chargeLines: audit.chargeLines,
  currency: 'USD',
});

const auditText = (audit: BalanceAudit) =>
  [
    `Credits ${usd(audit.credits)} (${audit.creditLines} lines) − charges ${usd(audit.charges)} (${audit.chargeLines} lines) = ${usd(audit.credits - audit.charges)}`,
    `Balance ${usd(audit.balance)}: ${
      audit.difference === 0
        ? 'proven by the ledger.'
        : `NOT proven: the ledger says ${usd(audit.difference)} more than the balance. A send accepted while reading shows as its price: run it again. A service older than the credit ledger needs \`balance reconcile\` once.`
    }`,
  ].join('\n');

const balanceAudit = command({
  words: ['balance', 'audit'],
  args: ['<VA>'],
  summary: 'Prove the balance from the ledger: balance = credits − charges (exit 1 when it does not hold)',
  examples: [`balance audit ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const audit = await context.accounts.balanceAudit(sid);
    return { json: auditJson(audit), text: auditText(audit), ...(audit.difference !== 0 && { exitCode: 1 }) };
  },
});

const balanceReconcile = command({
  words: ['balance', 'reconcile'],
  args: ['<VA>'],
  summary: 'Once, for a service older than the credit ledger: a line that explains its balance (audited)',
  details: [
    'The balance does not change. Run `balance audit` first: the difference is what the line records.',
  ],
  examples: [`balance reconcile ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const audit = await context.accounts.reconcileBalance(context.change, sid);
    return { json: auditJson(audit), text: auditText(audit) };
  },
});

const balanceShards = command({
  words: ['balance', 'shards'],
  args: ['<VA>', '<count>'],
  summary: 'Spread the balance over more items, for a service sending more than ~40 a second (audited)',
  details: [
    `The whole balance moves, evenly, in one write; nothing is added or taken. 1 to ${MAX_BALANCE_SHARDS}; a spread can grow, never shrink.`,
    'Why and when: docs/adr/0014-sharded-balance.md and docs/operations.md.',
  ],
  examples: [`balance shards ${VA} 16`],
  parse: ([sid, count]) => ({ sid: parse.serviceSid(sid!), count: count! }),
  run: async (context, { sid, count }) => {
    const service = await context.accounts.spreadBalance(context.change, sid, count);
    const shards = service.balanceShards ?? 1;
    return {
      json: { serviceSid: sid, shards, balance: formatUnits(service.balance), currency: 'USD' },
      text: `Balance of ${service.name}: ${usd(service.balance)}, spread over ${shards} shard${shards === 1 ? '' : 's'}`,
    };
  },
});

export const balanceCommands: readonly Command[] = [
  balanceShow,
  balanceTopUp,
  balanceShards,
  balanceAudit,
  balanceReconcile,
  charges,
];
