/** `balance show`, `balance topup`, `charges`: the balance and the ledger of charges. */
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
  summary: 'Add USD (up to 4 decimals) to the balance',
  examples: [`balance topup ${VA} 10`, `balance topup ${VA} 0.5`],
  parse: ([sid, amount]) => ({
    sid: parse.serviceSid(sid!),
    units: parse.usd(amount!, 'Top-up amount', { allowZero: false }),
  }),
  run: async (context, { sid, units }) => {
    await loadService(context, sid);
    const balance = await context.accounts.topUp(sid, units);
    return {
      json: { serviceSid: sid, added: formatUnits(units), balance: formatUnits(balance), currency: 'USD' },
      text: `Added ${usd(units)}. Balance: ${usd(balance)}`,
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

export const balanceCommands: readonly Command[] = [balanceShow, balanceTopUp, charges];
