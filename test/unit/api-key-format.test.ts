/** The API key format (core/api-key-format.ts) with the HMAC tagger of the adapters. */
import { randomBytes } from 'node:crypto';
import { HmacApiKeyTagger, newApiKey } from '../../functions/adapters/crypto';
import { masterKeyRing } from '../../functions/adapters/keyring';
import {
  API_KEY_BODY_LENGTH,
  API_KEY_TAG_LENGTH,
  classifyApiKey,
  formatApiKey,
  parseApiKey,
} from '../../functions/core/api-key-format';

const tagger = new HmacApiKeyTagger('api-key-format-test-master-key-0123456789');
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

it('issues otpk2_<43-character body>_<22-character tag>, and recognises its own keys', async () => {
  const key = await newApiKey(tagger);
  expect(key).toMatch(
    new RegExp(`^otpk2_[A-Za-z0-9_-]{${API_KEY_BODY_LENGTH}}_[A-Za-z0-9_-]{${API_KEY_TAG_LENGTH}}$`),
  );
  expect(classifyApiKey(key, tagger)).toBe('tagged');
  expect(await newApiKey(tagger)).not.toBe(key);
});

it('the tag is the HMAC of the prefix and body under the api-key-tag key, and only that key', () => {
  const body = randomBytes(32).toString('base64url');
  const key = formatApiKey(body, tagger);
  expect(parseApiKey(key)).toEqual({ format: 'tagged', signed: `otpk2_${body}`, tag: key.slice(-22) });
  // Another deployment (another master key) issued it: refused.
  expect(classifyApiKey(key, new HmacApiKeyTagger('another-deployment-master-key-0123456789'))).toBe(
    'forged',
  );
  // A key of another purpose of the same ring does not make the tag.
  const ring = masterKeyRing('api-key-format-test-master-key-0123456789');
  const otherPurpose = new HmacApiKeyTagger({ key: () => ring.key('code-hash') });
  expect(classifyApiKey(key, otherPurpose)).toBe('forged');
});

it('changing any one character of a tagged key makes it refused (forged or malformed, never tagged)', async () => {
  const key = await newApiKey(tagger);
  for (let i = 0; i < key.length; i++) {
    for (const replacement of [BASE64URL[(BASE64URL.indexOf(key[i]!) + 1) % 64]!, '!']) {
      const tampered = key.slice(0, i) + replacement + key.slice(i + 1);
      expect([i, classifyApiKey(tampered, tagger)]).toEqual([
        i,
        expect.stringMatching(/^(forged|malformed)$/),
      ]);
    }
  }
  // Body or tag changed within the alphabet: the tag fails (not a format error).
  const tagStart = key.length - API_KEY_TAG_LENGTH;
  expect(classifyApiKey(`${key.slice(0, 6)}${key[6] === 'A' ? 'B' : 'A'}${key.slice(7)}`, tagger)).toBe(
    'forged',
  );
  expect(classifyApiKey(`${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`, tagger)).toBe('forged');
  expect(classifyApiKey(key.slice(0, tagStart), tagger)).toBe('malformed');
  expect(classifyApiKey(`${key}A`, tagger)).toBe('malformed');
});

it('recognises keys of the legacy format, and nothing else', () => {
  const legacy = `otpk_${randomBytes(32).toString('base64url')}`;
  expect(parseApiKey(legacy)).toEqual({ format: 'legacy' });
  expect(classifyApiKey(legacy, tagger)).toBe('legacy');
  for (const text of [
    '',
    'otpk_short',
    `otpk_${'!'.repeat(43)}`,
    `OTPK_${'A'.repeat(43)}`,
    `otpk2_${'A'.repeat(43)}`,
  ])
    expect(classifyApiKey(text, tagger)).toBe('malformed');
});

it('refuses to make a key from a body that is not 43 base64url characters', () => {
  expect(() => formatApiKey('short', tagger)).toThrow(/43 base64url/);
  expect(() => formatApiKey(`${'A'.repeat(42)}=`, tagger)).toThrow(/43 base64url/);
});
