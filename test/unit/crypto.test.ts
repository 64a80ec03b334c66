import { CryptoCodeVault, cryptoRandom, deriveKey } from '../../functions/adapters/crypto';
import { signPayload, verifySignature } from '../../functions/adapters/providers/signature';

const SID = 'VE0123456789abcdef0123456789abcdef';
const OTHER_SID = 'VEfedcba9876543210fedcba9876543210';

describe('CryptoCodeVault', () => {
  const vault = new CryptoCodeVault('master-key-for-tests');

  it('hashes a code bound to its verification, keyed by the master key', () => {
    expect(vault.hash(SID, '123456')).toBe(vault.hash(SID, '123456'));
    expect(vault.hash(SID, '123456')).not.toBe(vault.hash(OTHER_SID, '123456'));
    expect(vault.hash(SID, '123456')).not.toBe(vault.hash(SID, '123457'));
    expect(new CryptoCodeVault('another-master-key').hash(SID, '123456')).not.toBe(vault.hash(SID, '123456'));
    expect(vault.hash(SID, '123456')).not.toContain('123456');
  });

  it('seals a code so only the same verification opens it', () => {
    const sealed = vault.seal(SID, 'Ab3dE9');
    expect(sealed).not.toContain('Ab3dE9');
    expect(vault.seal(SID, 'Ab3dE9')).not.toBe(sealed);
    expect(vault.open(SID, sealed)).toBe('Ab3dE9');
    expect(() => vault.open(OTHER_SID, sealed)).toThrow();
    expect(() => new CryptoCodeVault('another-master-key').open(SID, sealed)).toThrow();
  });

  it('derives independent keys per purpose', () => {
    expect(deriveKey('m', 'a').equals(deriveKey('m', 'b'))).toBe(false);
    expect(deriveKey('m', 'a').equals(deriveKey('m', 'a'))).toBe(true);
  });
});

describe('cryptoRandom', () => {
  it('makes 6-digit codes and SIDs of 32 hex characters', () => {
    for (let i = 0; i < 1000; i++) expect(cryptoRandom.code()).toMatch(/^\d{6}$/);
    expect(cryptoRandom.sid('VE')).toMatch(/^VE[0-9a-f]{32}$/);
  });
});

describe('receipt signatures', () => {
  const secret = deriveKey('m', 'receipt:carrier');
  const body = '{"reference":"x","messageId":"y","status":"delivered"}';
  const now = new Date('2026-11-21T12:00:00Z');

  it('verify a fresh signature over the exact body', () => {
    expect(verifySignature(secret, body, signPayload(secret, body, now), now)).toBe(true);
  });

  it('refuse another body, another secret, a missing or malformed header, or an old timestamp', () => {
    const header = signPayload(secret, body, now);
    expect(verifySignature(secret, `${body} `, header, now)).toBe(false);
    expect(verifySignature(deriveKey('other', 'receipt:carrier'), body, header, now)).toBe(false);
    expect(verifySignature(secret, body, undefined, now)).toBe(false);
    expect(verifySignature(secret, body, 't=abc,v1=00', now)).toBe(false);
    expect(verifySignature(secret, body, header, new Date(now.getTime() + 301_000))).toBe(false);
    expect(verifySignature(secret, body, header, new Date(now.getTime() + 299_000))).toBe(true);
  });
});
