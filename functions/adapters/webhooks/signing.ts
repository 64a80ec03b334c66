import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures per the Standard Webhooks scheme (standardwebhooks.com), which its libraries verify as is:
 * secret `whsec_<base64 key>`, content `${webhook-id}.${webhook-timestamp}.${body}`, HMAC-SHA256 with the
 * base64-decoded key, header `webhook-signature: v1,<base64 mac>` (several, space-separated, during a rotation).
 */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** 32 random bytes: above the scheme's 24-byte minimum. */
const SECRET_BYTES = 32;
/** Receivers reject timestamps further than this from their clock (replays of old deliveries). */
const WEBHOOK_TOLERANCE_SECONDS = 300;

export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

function secretKey(secret: string): Buffer {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) throw new Error('A webhook secret starts with whsec_');
  return Buffer.from(secret.slice(WEBHOOK_SECRET_PREFIX.length), 'base64');
}

/** One `v1,<base64>` signature of already-joined content `${id}.${timestamp}.${body}`. */
export function signWebhookContent(secret: string, content: string): string {
  return `v1,${createHmac('sha256', secretKey(secret)).update(content).digest('base64')}`;
}

export interface SignedWebhook {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
  body: string;
}

/**
 * What a receiver does: the timestamp is recent, and one of the `v1` signatures matches one of the secrets
 * (compared in constant time). The local receiver and the tests use it; docs/webhooks.md has the same in a few
 * lines for customers.
 */
export function verifyWebhook(
  secrets: readonly string[],
  webhook: SignedWebhook,
  now: Date,
  toleranceSeconds = WEBHOOK_TOLERANCE_SECONDS,
): boolean {
  const { id, timestamp, signature, body } = webhook;
  if (!id || !timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const given = signature
    .split(' ')
    .filter((part) => part.startsWith('v1,'))
    .map((part) => Buffer.from(part.slice(3), 'base64'));
  return secrets.some((secret) => {
    const expected = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest();
    return given.some((mac) => mac.length === expected.length && timingSafeEqual(mac, expected));
  });
}
