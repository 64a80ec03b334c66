/**
 * Vonage's two JWTs, with node:crypto only (no SDK):
 * - the application JWT we send with each request: RS256 with the application's private key, claims
 *   `application_id`, `iat`, `exp`, `jti` (as @vonage/jwt's tokenGenerate makes it);
 * - the signed-webhook JWT Vonage sends with each callback: HS256 with the signature secret; of its claims
 *   (`iat`, `jti`, `iss`, `payload_hash`: the SHA-256 hex of the raw body, `api_key`, `application_id`) we read
 *   the first, second and fourth; it has no `exp`: we bound `iat` and remember `jti`. The tests and the local
 *   simulator make it apart from this file (local/vonage-signed-webhook.ts).
 */
import { createHash, createHmac, createSign, randomUUID, timingSafeEqual } from 'node:crypto';

const b64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');
const encodeJson = (value: unknown): string => b64url(JSON.stringify(value));

/** The application JWT: valid `ttlSeconds` from `now`. */
export function applicationJwt(
  applicationId: string,
  privateKey: string,
  now: Date,
  ttlSeconds = 900,
): string {
  const iat = Math.floor(now.getTime() / 1000);
  const signingInput = `${encodeJson({ alg: 'RS256', typ: 'JWT' })}.${encodeJson({
    application_id: applicationId,
    iat,
    exp: iat + ttlSeconds,
    jti: randomUUID(),
  })}`;
  const signature = createSign('RSA-SHA256').update(signingInput).sign(privateKey);
  return `${signingInput}.${b64url(signature)}`;
}

const sha256Hex = (body: string): string => createHash('sha256').update(body, 'utf8').digest('hex');

/** How far a callback's `iat` may be from now, either way (Vonage retries with a fresh token). */
const SIGNED_WEBHOOK_WINDOW_SECONDS = 300;

export interface SignedWebhookClaims {
  jti: string;
  iat: number;
}

/**
 * The claims of a signed callback when its token is an HS256 JWT signed with `secret`, its `payload_hash` is the
 * body's, and its `iat` is within the window; otherwise undefined. Replay (`jti` seen before) is the caller's.
 */
export function verifySignedWebhook(
  authorization: string | undefined,
  body: string,
  secret: string,
  now: Date,
): SignedWebhookClaims | undefined {
  const token = /^Bearer\s+([\w-]+\.[\w-]+\.[\w-]+)$/.exec(authorization?.trim() ?? '')?.[1];
  if (!token) return undefined;
  const [header, payload, signature] = token.split('.') as [string, string, string];
  let parsedHeader: { alg?: unknown };
  let claims: { iat?: unknown; jti?: unknown; payload_hash?: unknown };
  try {
    parsedHeader = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as typeof parsedHeader;
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof claims;
  } catch {
    return undefined;
  }
  // Only HS256: a token naming another algorithm (`none`, RS256 with the secret as a "public key") is refused.
  if (parsedHeader.alg !== 'HS256') return undefined;
  const expected = createHmac('sha256', secret).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  if (typeof claims.payload_hash !== 'string' || claims.payload_hash.toLowerCase() !== sha256Hex(body))
    return undefined;
  if (typeof claims.iat !== 'number' || !Number.isFinite(claims.iat)) return undefined;
  if (Math.abs(now.getTime() / 1000 - claims.iat) > SIGNED_WEBHOOK_WINDOW_SECONDS) return undefined;
  if (typeof claims.jti !== 'string' || claims.jti.length === 0 || claims.jti.length > 200) return undefined;
  return { jti: claims.jti, iat: claims.iat };
}
