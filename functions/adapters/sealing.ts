import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM sealing of short secrets kept in the table (a code during its delivery, a webhook signing secret).
 * `aad` binds the sealed value to its item (the verification SID, `service/endpoint`), so a copy moved to another
 * item opens nowhere. Stored as `iv.ciphertext.tag`, each part base64url, with a random 12-byte IV: the one
 * format every sealed value in the table has.
 */
export function seal(key: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url')).join('.');
}

/** The plaintext of a value `seal` made with the same key and `aad`; throws for any other key, aad or change. */
export function open(key: Buffer, sealed: string, aad: string): string {
  const [iv, data, tag] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
  if (!iv || !data || !tag) throw new Error('Malformed sealed value');
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
}
