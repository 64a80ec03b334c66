import { parsePhone } from '../../functions/core/phone';
import { CHANNELS, ROUTES, parseChannelList, planRoute } from '../../functions/core/routing';

const everyChannel = { enabledChannels: [...CHANNELS], prices: {} };

describe('parsePhone', () => {
  it('normalises what a user typed to E.164 and tells the country and number type', () => {
    expect(parsePhone('+44 7400 123456')).toEqual({ e164: '+447400123456', country: 'GB', type: 'MOBILE' });
    expect(parsePhone('+1 (415) 555-0100')).toEqual({
      e164: '+14155550100',
      country: 'US',
      type: 'FIXED_LINE_OR_MOBILE',
    });
    expect(parsePhone('+442079460000')?.type).toBe('FIXED_LINE');
  });

  it('refuses anything that is not a valid international number', () => {
    for (const raw of ['', '14155550100', '+1415', '+999123456789', 'hello', '+44 7400 12345x']) {
      expect(parsePhone(raw)).toBeUndefined();
    }
  });
});

describe('planRoute', () => {
  it('orders the reachable enabled channels by provider cost, cheapest first', () => {
    const plan = planRoute(parsePhone('+447400123456')!, everyChannel);
    expect(plan).toEqual({ ok: true, channels: ['sna', 'viber', 'whatsapp', 'rcs', 'sms'], price: 600 });
    const costs = (plan as { channels: (keyof (typeof ROUTES)['GB']['cost'])[] }).channels.map(
      (c) => ROUTES.GB!.cost[c]!,
    );
    expect(costs).toEqual([...costs].sort((a, b) => a - b));
  });

  it('leaves out channels that cannot reach the number type (SNA needs a mobile)', () => {
    const plan = planRoute(parsePhone('+14155550100')!, everyChannel);
    expect(plan.ok && plan.channels).toEqual(['whatsapp', 'rcs', 'sms']);
  });

  it('leaves out disabled channels', () => {
    const plan = planRoute(parsePhone('+447400123456')!, {
      enabledChannels: ['sms', 'whatsapp'],
      prices: {},
    });
    expect(plan.ok && plan.channels).toEqual(['whatsapp', 'sms']);
  });

  it('names the refusal: unroutable country, no eligible channel, no price', () => {
    expect(planRoute(parsePhone('+819012345678')!, everyChannel)).toEqual({ ok: false, code: 'unroutable' });
    expect(planRoute(parsePhone('+442079460000')!, everyChannel)).toEqual({
      ok: false,
      code: 'no_eligible_channel',
    });
    expect(planRoute(parsePhone('+5352123456')!, everyChannel)).toEqual({ ok: false, code: 'not_priceable' });
  });

  it('uses a service price over the list price', () => {
    expect(planRoute(parsePhone('+5352123456')!, { ...everyChannel, prices: { CU: 1200 } })).toMatchObject({
      ok: true,
      price: 1200,
    });
    expect(planRoute(parsePhone('+14155550100')!, { ...everyChannel, prices: { US: 450 } })).toMatchObject({
      price: 450,
    });
  });
});

describe('parseChannelList', () => {
  it('trims, ignores case, empty entries and repeats, and gives the channels in CHANNELS order', () => {
    expect(parseChannelList('sms,whatsapp')).toEqual({ channels: ['sms', 'whatsapp'], unknown: [] });
    expect(parseChannelList(' WhatsApp , sms,,SMS, ')).toEqual({
      channels: ['sms', 'whatsapp'],
      unknown: [],
    });
    expect(parseChannelList('sna,rcs,viber,whatsapp,sms').channels).toEqual([...CHANNELS]);
  });

  it('tells the names that are no channel, trimmed and in lower case, once each', () => {
    expect(parseChannelList('sms, Pigeon,pigeon ,telegram')).toEqual({
      channels: ['sms'],
      unknown: ['pigeon', 'telegram'],
    });
  });

  it('gives no channel for an empty list: what that means is the caller’s to say', () => {
    for (const text of ['', ',', ' , ,'])
      expect(parseChannelList(text)).toEqual({ channels: [], unknown: [] });
  });
});
