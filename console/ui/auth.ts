/** Cognito's hosted sign-in and sign-out (a deployment's console; the local stack signs in on its own page). */
import { request, TOKEN_KEY } from './api';
import { session } from './session';

function base64url(bytes: ArrayBuffer | Uint8Array): string {
  let text = '';
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const redirectUri = () => `${location.origin}/console`;

/** Cognito's hosted sign-in, authorization code with PKCE (a public client: no secret in the page). */
export async function cognitoSignIn(): Promise<void> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem('otp-console-pkce', JSON.stringify({ verifier, state }));
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
  const saved = JSON.parse(sessionStorage.getItem('otp-console-pkce') ?? '{}') as {
    verifier?: string;
    state?: string;
  };
  sessionStorage.removeItem('otp-console-pkce');
  history.replaceState(null, '', `/console${location.hash}`);
  if (!saved.verifier || saved.state !== params.get('state'))
    throw new Error('The sign-in answer does not match.');
  const response = await request(new URL('/oauth2/token', session.config.authUrl).toString(), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: session.config.clientId!,
      code,
      redirect_uri: redirectUri(),
      code_verifier: saved.verifier,
    }),
  });
  if (!response.ok) throw new Error('Signing in failed.');
  const tokens = (await response.json()) as { id_token?: string };
  if (tokens.id_token) sessionStorage.setItem(TOKEN_KEY, tokens.id_token);
}

/** Ends the hosted sign-in's own session too, or the next "Sign in" would sign straight back in. */
export function cognitoSignOut(): void {
  const url = new URL('/logout', session.config.authUrl);
  url.search = new URLSearchParams({
    client_id: session.config.clientId!,
    logout_uri: redirectUri(),
  }).toString();
  location.assign(url.toString());
}
