import { createHash, createHmac, randomBytes, randomInt } from 'node:crypto';
import type { ApiKeyMaker } from '../core/accounts/ports';
import { API_KEY_TAG_LENGTH, formatApiKey } from '../core/api-key-format';
import type { ApiKeyTagger, CodeVault, Random } from '../core/ports';
import { toKeyRing, type KeyRing, type KeySource } from './keyring';
import { open, seal } from './sealing';

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

  /** The ring's keys are read (a deferred ring, adapters/keyring.ts); at once otherwise. */
  ready(): Promise<void> {
    return this.keys.ready?.() ?? Promise.resolve();
  }

  hash(verificationSid: string, code: string): string {
    return createHmac('sha256', this.hashKey()).update(`${verificationSid}\n${code}`).digest('base64url');
  }

  seal(verificationSid: string, code: string): string {
    return seal(this.sealKey(), code, verificationSid);
  }

  open(verificationSid: string, sealed: string): string {
    return open(this.sealKey(), sealed, verificationSid);
  }
}

/** Codes from `crypto.randomInt` (rejection sampling: uniform, no modulo bias); SIDs from 16 random bytes. */
export const cryptoRandom: Random = {
  code: () => String(randomInt(0, 1_000_000)).padStart(6, '0'),
  sid: (prefix) => `${prefix}${randomBytes(16).toString('hex')}`,
};

/**
 * The SHA-256 (hex) of an API key: the only form in which a key is stored (the admin command issues it) and
 * looked up (the API's authentication). Its first characters are the key id that `key list` shows.
 */
export const hashApiKey = (apiKey: string): string => createHash('sha256').update(apiKey).digest('hex');

/** HMAC-SHA256 under the ring's `api-key-tag` key, cut to the tag's length. */
export class HmacApiKeyTagger implements ApiKeyTagger {
  private readonly keys: KeyRing;
  private tagKey: Buffer | undefined;

  constructor(keys: KeySource) {
    this.keys = toKeyRing(keys);
  }

  ready(): Promise<void> {
    return this.keys.ready?.() ?? Promise.resolve();
  }

  isReady(): boolean {
    return this.keys.isReady?.() ?? true;
  }

  tag(signed: string): string {
    const mac = createHmac('sha256', (this.tagKey ??= this.keys.key('api-key-tag')))
      .update(signed)
      .digest('base64url');
    return mac.slice(0, API_KEY_TAG_LENGTH);
  }
}

/**
 * A new API key, shown once (only its `hashApiKey` is stored): 32 random bytes, tagged under the deployment's
 * `api-key-tag` key (core/api-key-format.ts).
 */
export async function newApiKey(tagger: ApiKeyTagger): Promise<string> {
  await tagger.ready?.();
  return formatApiKey(randomBytes(32).toString('base64url'), tagger);
}

/** The accounts core's key maker: tagged keys, found by their hash. */
export const taggedApiKeys = (tagger: ApiKeyTagger): ApiKeyMaker => ({
  ready: async () => {
    await tagger.ready?.();
  },
  newKey: async () => {
    const apiKey = await newApiKey(tagger);
    return { apiKey, keyHash: hashApiKey(apiKey) };
  },
});

export const systemClock = { now: () => new Date() };
