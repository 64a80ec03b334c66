import {
  DEFAULT_PROVIDER_CONFIG,
  configuredChannels,
  parseProviderConfig,
} from '../../functions/adapters/providers/config';
import { buildProviderRegistry } from '../../functions/adapters/providers/registry';
import type { Provider } from '../../functions/core/providers';
import { providersFromEnv, vonageFromEnv } from '../../functions/wiring/providers';

const named = (name: string): Provider => ({
  name,
  send: () => Promise.reject(new Error('not in this test')),
  parseReceipt: () => undefined,
});

test('no configuration: every channel on http-carrier, as before', () => {
  expect(parseProviderConfig(undefined)).toEqual(DEFAULT_PROVIDER_CONFIG);
  expect(configuredChannels(parseProviderConfig(''))).toEqual(['sms', 'whatsapp', 'viber', 'rcs', 'sna']);
  const registry = providersFromEnv({}, 'master-key-of-this-test-0123456789');
  expect(registry.forChannel('sms', 'US').name).toBe('carrier');
  expect(registry.byName('carrier')?.name).toBe('carrier');
  expect(registry.byName('vonage')).toBeUndefined();
});

test('per channel, with a per-country override', () => {
  const config = parseProviderConfig(
    '{"sms":"aws-sms","rcs":"aws-sms","whatsapp":"aws-whatsapp","viber":"vonage","countries":{"DE":{"sms":"vonage"}}}',
  );
  expect(configuredChannels(config)).toEqual(['sms', 'whatsapp', 'viber', 'rcs']);
  const registry = buildProviderRegistry(config, {
    'aws-sms': named('aws-sms'),
    'aws-whatsapp': named('aws-whatsapp'),
    vonage: named('vonage'),
  });
  expect(registry.forChannel('sms', 'US').name).toBe('aws-sms');
  expect(registry.forChannel('sms', 'DE').name).toBe('vonage');
  expect(registry.forChannel('viber', 'DE').name).toBe('vonage');
  expect(registry.forChannel('whatsapp', 'DE').name).toBe('aws-whatsapp');
  expect(() => registry.forChannel('sna', 'US')).toThrow(/No provider/);
  expect(registry.byName('carrier')).toBeUndefined();
});

test.each([
  ['not json', /not JSON/],
  ['{"viber":"aws-sms"}', /aws-sms does not carry viber/],
  ['{"sna":"vonage"}', /vonage does not carry sna/],
  ['{"sms":"twilio"}', /sms/],
  ['{"email":"vonage"}', /email|Unrecognized/i],
  ['{"sms":"aws-sms","countries":{"DE":{"viber":"vonage"}}}', /viber has no default provider/],
  ['{"sms":"aws-sms","countries":{"de":{"sms":"vonage"}}}', /countries/],
])('%s is refused at cold start', (raw, message) => {
  expect(() => parseProviderConfig(raw)).toThrow(message);
});

test('the registry needs an adapter for every provider named', () => {
  expect(() => buildProviderRegistry(parseProviderConfig('{"sms":"aws-sms"}'), {})).toThrow(/aws-sms/);
});

test('OTP_VONAGE_FROM names senders for some channels only, as the stack sets it (providers.example.json)', () => {
  expect(vonageFromEnv(undefined)).toEqual({});
  expect(vonageFromEnv('{"viber":"Acme","sms":"Acme"}')).toEqual({ viber: 'Acme', sms: 'Acme' });
  // Every function wiring the providers reads it at cold start: a partial map must not stop them.
  const registry = providersFromEnv(
    { OTP_PROVIDERS: '{"sms":"vonage","viber":"vonage"}', OTP_VONAGE_FROM: '{"viber":"Acme","sms":"Acme"}' },
    'master-key-of-this-test-0123456789',
  );
  expect(registry.forChannel('viber', 'DE').name).toBe('vonage');
  for (const raw of ['{"sna":"Acme"}', '{"sms":""}', '{"sms":5}', '["Acme"]', 'null']) {
    expect(() => vonageFromEnv(raw)).toThrow(/OTP_VONAGE_FROM is not valid/);
  }
});
