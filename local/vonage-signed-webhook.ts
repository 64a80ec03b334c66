/**
 * The token Vonage puts in a Messages API callback's `Authorization: Bearer` header, made as Vonage documents it
 * ("Signed webhooks", developer.vonage.com/en/messages/concepts/signed-webhooks): a JWT signed HS256 with the
 * account's signature secret, whose claims carry `iat`, a unique `jti`, `iss` "Vonage", `payload_hash` (the
 * SHA-256 of the body, hex) and the `api_key` and `application_id` the callback is for.
 *
 * Written from that page and not from the adapter's verifier (`vonage-jwt.ts`), so that the simulator and the
 * tests judge the adapter rather than agree with it: a verifier that read the wrong claim, hashed the body in
 * another encoding or could not take Vonage's extra claims would fail here.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';

export interface SignedWebhookOptions {
  secret: string;
  /** When Vonage signed it. */
  at: Date;
  apiKey: string;
  applicationId: string;
  jti?: string;
}

const segment = (value: object): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

export function vonageSignedWebhookToken(body: string, options: SignedWebhookOptions): string {
  const header = segment({ alg: 'HS256', typ: 'JWT' });
  const claims = segment({
    iat: Math.floor(options.at.getTime() / 1000),
    jti: options.jti ?? randomUUID(),
    iss: 'Vonage',
    payload_hash: createHash('sha256').update(body, 'utf8').digest('hex'),
    api_key: options.apiKey,
    application_id: options.applicationId,
  });
  const signature = createHmac('sha256', options.secret).update(`${header}.${claims}`).digest('base64url');
  return `${header}.${claims}.${signature}`;
}
