/** `price list|set|remove`: the list prices and a service's own prices. */
import { formatUnits } from '../../../functions/core/money';
import { ROUTES } from '../../../functions/core/routing';
import { table, usd } from '../format';
import * as parse from '../validate';
import { command, type Command } from '../framework';
import { VA, loadService, sidOnly } from './common';

const priceOrNull = (units: number | undefined) => (units === undefined ? null : formatUnits(units));

const priceList = command({
  words: ['price', 'list'],
  args: ['<VA>'],
  summary: 'Per served country: list price, own price, price charged',
  examples: [`price list ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    const countries = [...new Set([...Object.keys(ROUTES), ...Object.keys(service.prices)])];
    const prices = countries.map((country) => {
      const listPrice = ROUTES[country]?.price;
      const ownPrice = service.prices[country];
      return {
        country,
        listPrice: priceOrNull(listPrice),
        servicePrice: priceOrNull(ownPrice),
        price: priceOrNull(ownPrice ?? listPrice),
      };
    });
    return {
      json: { serviceSid: sid, currency: 'USD', prices },
      text: table(
        ['Country', 'List USD', 'Own USD', 'Charged USD'],
        prices.map((p) => [p.country, p.listPrice ?? '-', p.servicePrice ?? '-', p.price ?? 'not priceable']),
      ),
    };
  },
});

const priceSet = command({
  words: ['price', 'set'],
  args: ['<VA>', '<CC>', '<usd>'],
  summary: "Set the service's own price for a served country",
  examples: [`price set ${VA} CU 0.0600`],
  parse: ([sid, country, amount]) => ({
    sid: parse.serviceSid(sid!),
    country: parse.servedCountry(country!),
    units: parse.usd(amount!, 'Price'),
  }),
  run: async (context, { sid, country, units }) => {
    await loadService(context, sid);
    await context.accounts.setPrice(context.change, sid, country, units);
    return {
      json: {
        serviceSid: sid,
        country,
        price: formatUnits(units),
        listPrice: priceOrNull(ROUTES[country]?.price),
        currency: 'USD',
      },
      text: `A send to ${country} now costs ${usd(units)}.`,
    };
  },
});

const priceRemove = command({
  words: ['price', 'remove'],
  args: ['<VA>', '<CC>'],
  summary: 'Remove an own price: the list price applies again',
  examples: [`price remove ${VA} CU`],
  parse: ([sid, country]) => ({ sid: parse.serviceSid(sid!), country: parse.country(country!) }),
  run: async (context, { sid, country }) => {
    const service = await loadService(context, sid);
    const removed = service.prices[country] !== undefined;
    if (removed) await context.accounts.setPrice(context.change, sid, country, undefined);
    const listPrice = ROUTES[country]?.price;
    return {
      json: { serviceSid: sid, country, removed, price: priceOrNull(listPrice), currency: 'USD' },
      text: [
        removed ? `Removed the own price for ${country}.` : `The service had no own price for ${country}.`,
        listPrice === undefined
          ? `Sends to ${country} are refused (${ROUTES[country] ? 'not_priceable' : 'unroutable'}).`
          : `A send to ${country} costs the list price, ${usd(listPrice)}.`,
      ].join(' '),
    };
  },
});

export const priceCommands: readonly Command[] = [priceList, priceSet, priceRemove];
