import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, randomInt } from 'node:crypto';
import type { CodeVault, Random } from '../core/ports';

/**
 * Every key the service uses is derived from one deployment master key (HKDF-SHA256 with a purpose label),
 * so the stack manages a single generated secret and each purpose still gets an independent key.
 */
export function deriveKey(masterKey: string, purpose: string): Buffer {
  return Buffer.from(
    hkdfSync('sha256', Buffer.from(masterKey, 'utf8'), Buffer.alloc(0), `otp:${purpose}`, 32),
  );
}

/** HMAC-SHA256 for the code hash, AES-256-GCM for the code kept during delivery; both bound to the SID. */
export class CryptoCodeVault implements CodeVault {
  private readonly hmacKey: Buffer;
  private readonly encryptionKey: Buffer;

  constructor(masterKey: string) {
    this.hmacKey = deriveKey(masterKey, 'code-hash');
    this.encryptionKey = deriveKey(masterKey, 'code-encryption');
  }

  hash(verificationSid: string, code: string): string {
    return createHmac('sha256', this.hmacKey).update(`${verificationSid}\n${code}`).digest('base64url');
  }

  seal(verificationSid: string, code: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    cipher.setAAD(Buffer.from(verificationSid));
    const sealed = Buffer.concat([cipher.update(code, 'utf8'), cipher.final()]);
    return [iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url')).join('.');
  }

  open(verificationSid: string, sealed: string): string {
    const [iv, data, tag] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
    if (!iv || !data || !tag) throw new Error('Malformed sealed code');
    const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, iv);
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
