import { allowedChannelsFromEnv } from '../../functions/runtime';
import { formatUnits, parseUsd } from '../../functions/core/money';
import { DEFAULT_SETTINGS, settingsFromEnv } from '../../functions/core/settings';
import { renderMessage } from '../../functions/core/message';
import { effectiveStatus, toView } from '../../functions/core/verification';
import { CREATED_AT, aVerification } from '../support/fixtures';

describe('money in units of 0.0001 USD', () => {
  it.each([
    [0, '0.0000'],
    [5, '0.0005'],
    [500, '0.0500'],
    [12_345_678, '1234.5678'],
  ])('%i units format as %s and parse back', (units, text) => {
    expect(formatUnits(units)).toBe(text);
    expect(parseUsd(text)).toBe(units);
  });

  it('refuses amounts that are negative, malformed or finer than 0.0001', () => {
    for (const text of ['-1', '0.00001', 'abc', '1e3', '', '1.2.3']) expect(parseUsd(text)).toBeUndefined();
    expect(parseUsd('25')).toBe(250_000);
  });
});

describe('settings', () => {
  it('default to 5-minute codes, 5 attempts, 3 sends in 5 minutes and 10 an hour, 8 s waits', () => {
    expect(settingsFromEnv({})).toEqual({
      codeTtlSeconds: 300,
      maxCheckAttempts: 5,
      burstLimit: 3,
      burstWindowSeconds: 300,
      hourlyLimit: 10,
      hourlyWindowSeconds: 3600,
      keyRequestsPerMinute: 120,
      consoleRequestsPerMinute: 120,
      channelWaitSeconds: 8,
      unreachableDays: 30,
    });
    expect(settingsFromEnv({})).toEqual(DEFAULT_SETTINGS);
  });

  it('read overrides from the environment and fail fast on nonsense', () => {
    expect(settingsFromEnv({ OTP_CHANNEL_WAIT_SECONDS: '0', OTP_CODE_TTL_SECONDS: '60' })).toMatchObject({
      channelWaitSeconds: 0,
      codeTtlSeconds: 60,
    });
    expect(() => settingsFromEnv({ OTP_BURST_LIMIT: '0' })).toThrow(/OTP_BURST_LIMIT/);
    expect(() => settingsFromEnv({ OTP_HOURLY_LIMIT: '2.5' })).toThrow(/OTP_HOURLY_LIMIT/);
    expect(() => settingsFromEnv({ OTP_CODE_TTL_SECONDS: 'five' })).toThrow(/OTP_CODE_TTL_SECONDS/);
  });
});

describe('code status derived on read: EXPIRED past expires_at, LOCKED out of attempts', () => {
  const created = CREATED_AT;
  const verification = aVerification({
    to: '+14155550100',
    deliveryStatus: 'SENT',
    channel: 'sms',
    price: 500,
    codeHash: undefined,
    sealedCode: undefined,
  });

  it('a PENDING code past expires_at is EXPIRED, whatever is stored', () => {
    expect(effectiveStatus(verification, new Date('2026-11-21T12:04:59.999Z'))).toBe('PENDING');
    expect(effectiveStatus(verification, new Date('2026-11-21T12:05:00.000Z'))).toBe('EXPIRED');
  });

  it('a PENDING code with no attempts left is LOCKED', () => {
    expect(effectiveStatus({ ...verification, attemptsRemaining: 0 }, created)).toBe('LOCKED');
  });

  it('settled states stay as stored', () => {
    const late = new Date('2026-11-22T00:00:00.000Z');
    expect(effectiveStatus({ ...verification, status: 'VERIFIED' }, late)).toBe('VERIFIED');
    expect(effectiveStatus({ ...verification, status: 'LOCKED' }, late)).toBe('LOCKED');
  });

  it("the view has exactly the verification object's fields and never the code or its hash", () => {
    const view = toView({ ...verification, codeHash: 'hash', sealedCode: 'sealed' }, created);
    expect(view).toEqual({
      sid: verification.sid,
      to: '+14155550100',
      status: 'PENDING',
      delivery_status: 'SENT',
      channel: 'sms',
      price: '0.0500',
      price_unit: 'USD',
      attempts_remaining: 5,
      expires_at: '2026-11-21T12:05:00.000Z',
      date_created: '2026-11-21T12:00:00.000Z',
    });
  });

  it('renders every placeholder of a template', () => {
    expect(renderMessage('{code} is your code ({code})', '123456')).toBe('123456 is your code (123456)');
  });
});

describe('OTP_ALLOWED_CHANNELS', () => {
  it('limits the channels of the deployment, all five by default, and refuses unknown names', () => {
    expect(allowedChannelsFromEnv({})).toEqual(['sms', 'whatsapp', 'viber', 'rcs', 'sna']);
    expect(allowedChannelsFromEnv({ OTP_ALLOWED_CHANNELS: 'sms, whatsapp' })).toEqual(['sms', 'whatsapp']);
    expect(() => allowedChannelsFromEnv({ OTP_ALLOWED_CHANNELS: 'sms,telegram' })).toThrow(/telegram/);
  });
});
