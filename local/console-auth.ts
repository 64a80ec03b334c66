/**
 * The console's sign-in on the local stack, in place of Cognito and API Gateway's JWT authorizer: a short-lived
 * token signed (HS256) with a key derived from the local master key, issued only to a request that comes from
 * the loopback address and names a loopback host, and verified by the local server on every route the manifest
 * marks `authorizer: 'console'`. The handler then sees the claims as API Gateway hands them over
 * (`requestContext.authorizer.jwt.claims`, array claims as a `[a b]` string).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import * as z from 'zod';
import { deriveKey } from '../functions/adapters/crypto';
import { OPERATOR_GROUP } from '../functions/console/routes';
import { isLoopbackRequest, type LocalResponse, type LocalRoute } from './server';

/** A local console session lasts an hour, like the Cognito ID token on AWS. */
const LOCAL_TOKEN_SECONDS = 3600;
const ISSUER = 'otp-local-console';

const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64url');

interface LocalClaims {
  sub: string;
  email: string;
  'cognito:groups'?: string[];
  iss: string;
  iat: number;
  exp: number;
}

export class LocalConsoleAuth {
  private readonly key: Buffer;

  constructor(
    masterKey: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.key = deriveKey(masterKey, 'console-local-sign-in');
  }

  sign(email: string, operator: boolean): { token: string; expiresAt: string } {
    const iat = Math.floor(this.now().getTime() / 1000);
    const claims: LocalClaims = {
      sub: email,
      email,
      ...(operator && { 'cognito:groups': [OPERATOR_GROUP] }),
      iss: ISSUER,
      iat,
      exp: iat + LOCAL_TOKEN_SECONDS,
    };
    const unsigned = `${b64(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64(JSON.stringify(claims))}`;
    return {
      token: `${unsigned}.${this.mac(unsigned)}`,
      expiresAt: new Date(claims.exp * 1000).toISOString(),
    };
  }

  /** The claims as API Gateway's JWT authorizer passes them on, or undefined (the route answers 401). */
  verify(authorization: string | undefined): Record<string, string> | undefined {
    const match = /^Bearer ([\w-]+)\.([\w-]+)\.([\w-]+)$/.exec(authorization ?? '');
    if (!match) return undefined;
    const [, header, payload, signature] = match;
    const expected = Buffer.from(this.mac(`${header}.${payload}`));
    const given = Buffer.from(signature!);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    let claims: LocalClaims;
    try {
      claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as LocalClaims;
    } catch {
      return undefined;
    }
    if (claims.iss !== ISSUER || !(claims.exp > this.now().getTime() / 1000)) return undefined;
    return {
      sub: claims.sub,
      email: claims.email,
      iss: claims.iss,
      iat: String(claims.iat),
      exp: String(claims.exp),
      ...(claims['cognito:groups'] && { 'cognito:groups': `[${claims['cognito:groups'].join(' ')}]` }),
    };
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url');
  }
}

const signInSchema = z.object({
  email: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9._+-]{1,64}@[a-z0-9.-]{1,100}$/),
  operator: z.boolean().optional(),
});

/**
 * `POST /console/local/sign-in` `{"email", "operator"}`: a token for that user id, loopback only. An operator's
 * sign-in also records the user's operator rights in the table (`grantOperator`), as `npm run admin -- operator
 * add` does on AWS: the console requires both.
 */
export function localSignInRoute(
  auth: LocalConsoleAuth,
  grantOperator: (userId: string) => Promise<void>,
): LocalRoute {
  return {
    method: 'POST',
    path: '/console/local/sign-in',
    handle: async (request): Promise<LocalResponse> => {
      if (!isLoopbackRequest(request)) {
        return {
          status: 403,
          body: { code: 'forbidden', message: 'The local sign-in answers on loopback only.' },
        };
      }
      // JSON only: a web page the developer visits can post a form or text/plain to loopback unseen (no CORS
      // preflight for those), and would otherwise record operator rights in the local table.
      const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/json') {
        return {
          status: 415,
          body: { code: 'invalid_parameter', message: 'Send JSON (Content-Type: application/json).' },
        };
      }
      let body: unknown;
      try {
        body = JSON.parse(request.body);
      } catch {
        body = undefined;
      }
      const input = signInSchema.safeParse(body);
      if (!input.success) {
        return { status: 400, body: { code: 'invalid_parameter', message: 'Give an e-mail address.' } };
      }
      if (input.data.operator === true) await grantOperator(input.data.email);
      return {
        status: 200,
        body: auth.sign(input.data.email, input.data.operator === true),
        headers: { 'cache-control': 'no-store' },
      };
    },
  };
}
