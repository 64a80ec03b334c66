/** Cognito's hosted sign-in and sign-out (a deployment's console; the local stack signs in on its own page). */
import { HttpError, request, statusMessage, TOKEN_KEY } from './api';
import { session } from './session';

/**
 * The refresh token of the code exchange (12 hours; the ID token the API takes lasts one): kept, like the ID token,
 * in this tab's sessionStorage, so that an hour's work is not lost to a new sign-in. Script in the page could read
 * it, but the page runs none but its own: its CSP allows no inline script and no script from another origin
 * (docs/console.md), and all text from the table goes in as `textContent`.
 */
const REFRESH_KEY = 'otp-console-refresh';
const PKCE_KEY = 'otp-console-pkce';

function base64url(bytes: ArrayBuffer | Uint8Array): string {
  let text = '';
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const redirectUri = () => `${location.origin}/console`;
const endpoint = (path: string) => new URL(path, session.config.authUrl).toString();
const form = (fields: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields),
  credentials: 'omit',
});

/**
 * Cognito's hosted sign-in, authorization code with PKCE (a public client: no secret in the page). The page's
 * address (its hash) is kept with the PKCE verifier: Cognito returns to the registered `/console` only, and the
 * user comes back to the page they were on.
 */
export async function cognitoSignIn(): Promise<void> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, hash: location.hash }));
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const url = new URL('/oauth2/authorize', session.config.authUrl);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: session.config.clientId!,
    redirect_uri: redirectUri(),
    scope: 'openid email',
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

/** Back from the hosted sign-in: trade the code for tokens; the ID token is what the API's authorizer takes. */
export async function finishCognitoSignIn(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  if (!code) return;
  const saved = JSON.parse(sessionStorage.getItem(PKCE_KEY) ?? '{}') as {
    verifier?: string;
    state?: string;
    hash?: string;
  };
  sessionStorage.removeItem(PKCE_KEY);
  const matches = !!saved.verifier && saved.state === params.get('state');
  history.replaceState(null, '', `/console${(matches && saved.hash) || location.hash}`);
  if (!matches) throw new Error('The sign-in answer does not match.');
  const response = await request(
    endpoint('/oauth2/token'),
    form({
      grant_type: 'authorization_code',
      client_id: session.config.clientId!,
      code,
      redirect_uri: redirectUri(),
      code_verifier: saved.verifier!,
    }),
  );
  if (!response.ok) throw new Error('Signing in failed.');
  const tokens = (await response.json()) as { id_token?: string; refresh_token?: string };
  if (tokens.id_token) sessionStorage.setItem(TOKEN_KEY, tokens.id_token);
  if (tokens.refresh_token) sessionStorage.setItem(REFRESH_KEY, tokens.refresh_token);
}

/**
 * A new ID token for the refresh token (Cognito's token endpoint, `grant_type=refresh_token`): true once it is
 * stored. Refused (4xx: the refresh token expired or was revoked), the session is over: the refresh token is
 * forgotten and false answered. No answer, or a failing server, throws and keeps it, to be tried again.
 */
export async function renewSession(): Promise<boolean> {
  const refreshToken = sessionStorage.getItem(REFRESH_KEY);
  if (!refreshToken) return false;
  const response = await request(
    endpoint('/oauth2/token'),
    form({ grant_type: 'refresh_token', client_id: session.config.clientId!, refresh_token: refreshToken }),
  );
  if (response.status >= 500) throw new HttpError(response.status, statusMessage(response.status));
  const tokens = response.ok
    ? ((await response.json().catch(() => ({}))) as { id_token?: string; refresh_token?: string })
    : {};
  if (!tokens.id_token) {
    sessionStorage.removeItem(REFRESH_KEY);
    return false;
  }
  sessionStorage.setItem(TOKEN_KEY, tokens.id_token);
  // An app client that rotates refresh tokens sends a new one with each renewal.
  if (tokens.refresh_token) sessionStorage.setItem(REFRESH_KEY, tokens.refresh_token);
  return true;
}

/** Forgets the session's tokens (the API refused a renewed token too, or the user signs out). */
export function forgetTokens(): string | null {
  const refreshToken = sessionStorage.getItem(REFRESH_KEY);
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(REFRESH_KEY);
  return refreshToken;
}

/** How long sign-out waits for Cognito to revoke the refresh token before it goes on without. */
const REVOKE_WAIT_MS = 3000;

/**
 * Revokes the refresh token (Cognito's `/oauth2/revoke`: with it, the ID tokens it gave), so that a copy of it is
 * of no use, then ends the hosted sign-in's own session too, or the next "Sign in" would sign straight back in.
 */
export async function cognitoSignOut(refreshToken: string | null): Promise<void> {
  if (refreshToken) {
    // A form post: Cognito has it whatever CORS lets the page read of the answer, which is not waited for long.
    await fetch(endpoint('/oauth2/revoke'), {
      ...form({ token: refreshToken, client_id: session.config.clientId! }),
      signal: AbortSignal.timeout(REVOKE_WAIT_MS),
    }).catch(() => undefined);
  }
  const url = new URL('/logout', session.config.authUrl);
  url.search = new URLSearchParams({
    client_id: session.config.clientId!,
    logout_uri: redirectUri(),
  }).toString();
  location.assign(url.toString());
}
