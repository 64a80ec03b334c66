/**
 * The post-deploy check's runner (functions/core/provider-check.ts): which checks it makes for a deployment's
 * providers, within the invocation's time, and how a check that throws is reported.
 */
import {
  PROVIDER_CHECK_KIND,
  runProviderCheck,
  type ProviderCheckInput,
  type ProviderChecker,
} from '../../functions/core/provider-check';
import type { Channel } from '../../functions/core/routing';

const calls: string[] = [];
beforeEach(() => calls.splice(0));

const perCountry: ProviderChecker = {
  scope: 'country',
  cannotCheck: ['delivery'],
  check: ({ channel, country, to }) => {
    calls.push(`${channel} ${country} ${to}`);
    return Promise.resolve([
      { check: 'dry run', ok: country !== 'DE', detail: country === 'DE' ? 'Denied' : 'ok' },
    ]);
  },
};
const perChannel: ProviderChecker = {
  scope: 'channel',
  cannotCheck: [],
  check: ({ channel }) => {
    calls.push(`${channel} *`);
    return Promise.reject(
      Object.assign(new Error('User is not authorized'), { name: 'AccessDeniedException' }),
    );
  },
};

const input = (overrides: Partial<ProviderCheckInput> = {}): ProviderCheckInput => ({
  request: { to: { GB: '+447700900123' } },
  channels: ['sms', 'whatsapp', 'sna'],
  // SMS on the dry-running provider in Germany and Britain only; WhatsApp everywhere on the other; sna on none.
  providerFor: (channel: Channel, country: string) =>
    channel === 'sms'
      ? ['DE', 'GB'].includes(country)
        ? 'dry'
        : 'carrier'
      : channel === 'whatsapp'
        ? 'read'
        : 'carrier',
  checkers: { dry: perCountry, read: perChannel },
  defaultNumber: (country) => `+${country}`,
  timeLeftMs: () => 30_000,
  reserveMs: 7_000,
  ...overrides,
});

test('one check per country for a dry-running provider, one per channel otherwise; the given number wins', async () => {
  const report = await runProviderCheck(input());
  expect(calls).toEqual(['whatsapp *', 'sms GB +447700900123', 'sms DE +DE']);
  expect(report.rows.map((row) => [row.channel, row.country, row.provider, row.ok, row.detail])).toEqual([
    ['whatsapp', '*', 'read', false, 'AccessDeniedException: User is not authorized'],
    ['sms', 'GB', 'dry', true, 'ok'],
    ['sms', 'DE', 'dry', false, 'Denied'],
  ]);
  // The channel-wide row says which countries it holds for: every one WhatsApp serves.
  expect(report.rows[0]!.countries).toContain('IN');
  expect(report.notChecked).toEqual([
    { channel: 'sms', provider: 'carrier' },
    { channel: 'sna', provider: 'carrier' },
  ]);
  expect(report.remaining).toEqual([]);
  expect(report.kind).toBe(PROVIDER_CHECK_KIND);
});

test('a channel the deployment does not allow is not checked', async () => {
  await runProviderCheck(input({ channels: ['sms'] }));
  expect(calls).toEqual(['sms GB +447700900123', 'sms DE +DE']);
});

test('out of time: no further check starts, the countries left are handed back and nothing of theirs is kept', async () => {
  let left = 10_000;
  const report = await runProviderCheck(
    input({
      timeLeftMs: () => {
        left -= 2_000;
        return left;
      },
    }),
  );
  // 8 s left before GB (checked), 6 s before DE: under the 7 s reserve.
  expect(calls).toEqual(['whatsapp *', 'sms GB +447700900123']);
  expect(report.remaining).toEqual(['DE']);
  expect(report.rows.map((row) => row.country)).toEqual(['*', 'GB']);
});

test('a continuation checks only the countries asked for, and no channel-wide check again', async () => {
  const report = await runProviderCheck(input({ request: { to: {}, countries: ['DE'] } }));
  expect(calls).toEqual(['sms DE +DE']);
  expect(report.notChecked).toEqual([]);
});

test('a country with no number to dry-run to fails, naming what to pass', async () => {
  const report = await runProviderCheck(input({ defaultNumber: () => undefined, request: { to: {} } }));
  expect(
    report.rows.filter((row) => row.check === 'destination').map((row) => [row.country, row.ok]),
  ).toEqual([
    ['GB', false],
    ['DE', false],
  ]);
  expect(calls).toEqual(['whatsapp *']);
});
