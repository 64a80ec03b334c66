/**
 * One AES-256-GCM helper seals both the codes kept during delivery and the webhook signing secrets. The two
 * vaults had their own copies of it, with the same format (`iv.ciphertext.tag`, base64url, 12-byte IV, the
 * binding as AAD): values sealed by those copies, kept below, still open.
 */
import { createHash } from 'node:crypto';
import { CryptoCodeVault, deriveKey, hashApiKey } from '../../functions/adapters/crypto';
import { open, seal } from '../../functions/adapters/sealing';
import { WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';

const MASTER = 'master-key-for-tests';
const VE = 'VE0123456789abcdef0123456789abcdef';
const VA = 'VA0123456789abcdef0123456789abcdef';
const WH = 'WH0123456789abcdef0123456789abcdef';

/** Sealed by CryptoCodeVault.seal and WebhookSecretVault.seal before they shared the helper. */
const SEALED_BY_OLD_CODE = {
  code: 'L2kHn3eUiFOVAjJC.4D9YcjSo.79jD0gKdZeIQpHXN3ZQZNA',
  webhookSecret: 'iCPqkDztmeUho-2K.fzebelCYxnnBLr7cXFMwXgKoOcJsdPOXUH_xGQMv.VSI28mFgZsrZg64uBFE7zg',
};

describe('sealing', () => {
  const key = deriveKey(MASTER, 'code-encryption');

  it('opens what it sealed with the same key and binding, and nothing else', () => {
    const sealed = seal(key, 'secret text', 'binding');
    expect(sealed).toMatch(/^[\w-]{16}\.[\w-]+\.[\w-]{22}$/);
    expect(seal(key, 'secret text', 'binding')).not.toBe(sealed);
    expect(open(key, sealed, 'binding')).toBe('secret text');
    expect(() => open(key, sealed, 'other binding')).toThrow();
    expect(() => open(deriveKey(MASTER, 'webhook-secrets'), sealed, 'binding')).toThrow();
    const [iv, data, tag] = sealed.split('.');
    expect(() => open(key, `${iv}.${data}`, 'binding')).toThrow(/Malformed/);
    expect(() => open(key, `${iv}.${data}x.${tag}`, 'binding')).toThrow();
  });

  it('opens codes and webhook secrets sealed by the code before the helper', () => {
    expect(new CryptoCodeVault(MASTER).open(VE, SEALED_BY_OLD_CODE.code)).toBe('123456');
    expect(new WebhookSecretVault(MASTER).open(VA, WH, SEALED_BY_OLD_CODE.webhookSecret)).toBe(
      'whsec_c2VjcmV0LWZvci10ZXN0cw==',
    );
    // The same values through the helper: the vaults add only their key and binding.
    expect(open(key, SEALED_BY_OLD_CODE.code, VE)).toBe('123456');
    expect(open(deriveKey(MASTER, 'webhook-secrets'), SEALED_BY_OLD_CODE.webhookSecret, `${VA}/${WH}`)).toBe(
      'whsec_c2VjcmV0LWZvci10ZXN0cw==',
    );
  });

  it('seals with each vault what the other cannot open', () => {
    const code = new CryptoCodeVault(MASTER).seal(VE, '654321');
    expect(() => new WebhookSecretVault(MASTER).open(VA, WH, code)).toThrow();
  });
});

describe('hashApiKey', () => {
  it('is the SHA-256 hex of the key, as stored by the accounts and looked up by the API', () => {
    const apiKey = `otpk_${'A'.repeat(43)}`;
    expect(hashApiKey(apiKey)).toBe(createHash('sha256').update(apiKey).digest('hex'));
    expect(hashApiKey(apiKey)).toMatch(/^[0-9a-f]{64}$/);
  });
});
