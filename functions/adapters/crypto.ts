import { createCipheriv, createDecipheriv, createHmac, randomBytes, randomInt } from 'node:crypto';
import type { CodeVault, Random } from '../core/ports';
import { toKeyRing, type KeyRing, type KeySource } from './keyring';

/**
 * Every key is derived with HKDF-SHA256 and a purpose label (see keyring.ts): from one master key on the local
 * stack, from the purpose group's own secret on AWS.
 */
export { deriveKey } from './keyring';

/** HMAC-SHA256 for the code hash, AES-256-GCM for the code kept during delivery; both bound to the SID. */
export class CryptoCodeVault implements CodeVault {
  private readonly keys: KeyRing;
  private hmacKey: Buffer | undefined;
  private encryptionKey: Buffer | undefined;

  /**
   * Each key is taken from the ring on first use: the check function, which only hashes, holds no encryption
   * key, and the delivery tasks, which only open, hold no hash key.
   */
  constructor(keys: KeySource) {
    this.keys = toKeyRing(keys);
  }

  private hashKey(): Buffer {
    return (this.hmacKey ??= this.keys.key('code-hash'));
  }

  private sealKey(): Buffer {
    return (this.encryptionKey ??= this.keys.key('code-encryption'));
  }

  hash(verificationSid: string, code: string): string {
    return createHmac('sha256', this.hashKey()).update(`${verificationSid}\n${code}`).digest('base64url');
  }

  seal(verificationSid: string, code: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealKey(), iv);
    cipher.setAAD(Buffer.from(verificationSid));
    const sealed = Buffer.concat([cipher.update(code, 'utf8'), cipher.final()]);
    return [iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url')).join('.');
  }

  open(verificationSid: string, sealed: string): string {
    const [iv, data, tag] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
    if (!iv || !data || !tag) throw new Error('Malformed sealed code');
    const decipher = createDecipheriv('aes-256-gcm', this.sealKey(), iv);
    decipher.setAAD(Buffer.from(verificationSid));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
  }
}

/** Codes from `crypto.randomInt` (rejection sampling: uniform, no modulo bias); SIDs from 16 random bytes. */
export const cryptoRandom: Random = {
  code: () => String(randomInt(0, 1_000_000)).padStart(6, '0'),
  sid: (prefix) => `${prefix}${randomBytes(16).toString('hex')}`,
};

export const systemClock = { now: () => new Date() };
