import type { NumberType, PhoneNumber } from './phone';

export const CHANNELS = ['sms', 'whatsapp', 'viber', 'rcs', 'sna'] as const;
export type Channel = (typeof CHANNELS)[number];
const isChannel = (value: string): value is Channel => (CHANNELS as readonly string[]).includes(value);

/**
 * A comma-separated list of channels, as the stack's context (`otp:allowedChannels`), the functions' environment
 * (`OTP_ALLOWED_CHANNELS`) and the admin command (`--channels`, `channels set`) take it: names trimmed, in any
 * case; empty entries and repeats ignored. `channels` come in CHANNELS order; `unknown` holds the names (trimmed,
 * lower case) that are no channel. What an empty or wrong list means is the caller's to say.
 */
export function parseChannelList(text: string): { channels: Channel[]; unknown: string[] } {
  const names = new Set(
    text
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== ''),
  );
  return {
    channels: CHANNELS.filter((channel) => names.has(channel)),
    unknown: [...names].filter((name) => !isChannel(name)),
  };
}

/** Which number types a channel can reach. SNA needs a mobile data session, so mobiles only. */
const CHANNEL_REACH: Record<Channel, readonly NumberType[]> = {
  sms: ['MOBILE', 'FIXED_LINE_OR_MOBILE'],
  whatsapp: ['MOBILE', 'FIXED_LINE_OR_MOBILE'],
  viber: ['MOBILE', 'FIXED_LINE_OR_MOBILE'],
  rcs: ['MOBILE', 'FIXED_LINE_OR_MOBILE'],
  sna: ['MOBILE'],
};

export interface CountryRoute {
  /** Customer price of one send in units of 0.0001 USD; undefined: served but not priced (`not_priceable`). */
  price?: number;
  /** Provider cost per channel in units of 0.0001 USD; a channel absent here does not serve the country. */
  cost: Partial<Record<Channel, number>>;
}

/**
 * The served countries. Customer prices are what a send is charged whatever channel delivers it;
 * provider costs decide the order channels are tried in. Values are list prices of late 2026, rounded.
 */
export const ROUTES: Readonly<Record<string, CountryRoute>> = {
  US: { price: 500, cost: { sna: 25, whatsapp: 50, rcs: 60, sms: 83 } },
  CA: { price: 500, cost: { sna: 25, whatsapp: 50, sms: 75 } },
  GB: { price: 600, cost: { sna: 30, whatsapp: 220, viber: 180, rcs: 250, sms: 350 } },
  DE: { price: 900, cost: { whatsapp: 760, viber: 450, sms: 830 } },
  FR: { price: 800, cost: { sna: 40, whatsapp: 300, viber: 350, rcs: 400, sms: 700 } },
  ES: { price: 800, cost: { whatsapp: 250, viber: 300, sms: 700 } },
  IT: { price: 800, cost: { whatsapp: 300, viber: 250, sms: 750 } },
  NL: { price: 900, cost: { whatsapp: 350, sms: 800 } },
  IN: { price: 150, cost: { whatsapp: 45, rcs: 50, sms: 20 } },
  BR: { price: 400, cost: { whatsapp: 80, sms: 250 } },
  MX: { price: 450, cost: { whatsapp: 90, sms: 300 } },
  AU: { price: 550, cost: { whatsapp: 300, sms: 400 } },
  ID: { price: 3500, cost: { whatsapp: 400, sms: 2800 } },
  PH: { price: 1900, cost: { whatsapp: 200, sms: 1500 } },
  NG: { price: 3000, cost: { whatsapp: 500, sms: 2500 } },
  ZA: { price: 1800, cost: { whatsapp: 200, sms: 1400 } },
  TR: { price: 1200, cost: { whatsapp: 150, sms: 900 } },
  PL: { price: 600, cost: { whatsapp: 300, sms: 400 } },
  SE: { price: 800, cost: { whatsapp: 350, sms: 650 } },
  AR: { price: 900, cost: { whatsapp: 250, sms: 700 } },
  CO: { price: 500, cost: { whatsapp: 100, sms: 350 } },
  EG: { price: 2200, cost: { whatsapp: 300, sms: 1800 } },
  KE: { price: 1500, cost: { whatsapp: 200, sms: 1100 } },
  PK: { price: 2800, cost: { whatsapp: 300, sms: 2300 } },
  BD: { price: 3000, cost: { sms: 2500 } },
  VN: { price: 2500, cost: { whatsapp: 300, sms: 2000 } },
  TH: { price: 1200, cost: { whatsapp: 250, sms: 900 } },
  SA: { price: 1500, cost: { whatsapp: 350, sms: 1100 } },
  AE: { price: 1600, cost: { whatsapp: 350, sms: 1200 } },
  UA: { price: 2500, cost: { viber: 300, sms: 2000 } },
  KZ: { price: 3000, cost: { whatsapp: 300, sms: 2500 } },
  UZ: { price: 3500, cost: { sms: 3000 } },
  AZ: { price: 3500, cost: { sms: 3000 } },
  GH: { price: 3000, cost: { whatsapp: 400, sms: 2500 } },
  TZ: { price: 2800, cost: { sms: 2300 } },
  PE: { price: 800, cost: { whatsapp: 200, sms: 600 } },
  CL: { price: 700, cost: { whatsapp: 200, sms: 500 } },
  MA: { price: 2500, cost: { sms: 2000 } },
  LK: { price: 3000, cost: { sms: 2500 } },
  // Served by the carriers, but no list price is set: a send is refused with `not_priceable` until an
  // operator sets a price for the service (`npm run admin -- price set <sid> CU <usd>`).
  CU: { cost: { sms: 900 } },
};

export interface RoutingPolicy {
  enabledChannels: readonly Channel[];
  /** Per-service customer prices that replace the list price, by country. */
  prices: Readonly<Record<string, number>>;
}

export type RoutePlan =
  | { ok: true; channels: Channel[]; price: number }
  | { ok: false; code: 'unroutable' | 'no_eligible_channel' | 'not_priceable' };

/** The channels to try, cheapest first, and the customer price of a send to this number. */
export function planRoute(phone: PhoneNumber, policy: RoutingPolicy): RoutePlan {
  const route = ROUTES[phone.country];
  if (!route) return { ok: false, code: 'unroutable' };
  const channels = CHANNELS.filter(
    (channel) =>
      route.cost[channel] !== undefined &&
      policy.enabledChannels.includes(channel) &&
      CHANNEL_REACH[channel].includes(phone.type),
  ).sort((a, b) => (route.cost[a] ?? 0) - (route.cost[b] ?? 0));
  if (channels.length === 0) return { ok: false, code: 'no_eligible_channel' };
  const price = policy.prices[phone.country] ?? route.price;
  if (price === undefined) return { ok: false, code: 'not_priceable' };
  return { ok: true, channels, price };
}
