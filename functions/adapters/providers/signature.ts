import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Receipt signatures: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, the scheme most carriers
 * use. The timestamp bounds replays; the comparison is constant-time.
 */
export const SIGNATURE_HEADER = 'x-carrier-signature';
const REPLAY_WINDOW_SECONDS = 300;

export function signPayload(secret: Buffer, body: string, at: Date): string {
  const timestamp = Math.floor(at.getTime() / 1000);
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}

export function verifySignature(
  secret: Buffer,
  body: string,
  header: string | undefined,
  now: Date,
): boolean {
  if (!header) return false;
  const parts = Object.fromEntries(
    header.split(',').map((part) => {
      const [name, ...value] = part.trim().split('=');
      return [name, value.join('=')];
    }),
  );
  const timestamp = Number(parts.t);
  const given = parts.v1;
  if (!Number.isInteger(timestamp) || typeof given !== 'string' || !/^[0-9a-f]{64}$/.test(given))
    return false;
  if (Math.abs(now.getTime() / 1000 - timestamp) > REPLAY_WINDOW_SECONDS) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}
