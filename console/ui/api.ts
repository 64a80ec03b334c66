/**
 * The console API's client. The sign-in token is kept in sessionStorage (this tab only) and sent as
 * `Authorization: Bearer`; no cookie is ever set.
 */

export type Json = Record<string, unknown>;

export const TOKEN_KEY = 'otp-console-token';

let onSignedOut = (): void => undefined;

/** What to do when the API refuses the token (main.ts: forget the user and show the sign-in). */
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T = Json>(method: string, path: string, body?: unknown): Promise<T> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const response = await fetch(`/console/api${path}`, {
    method,
    headers: {
      ...(token && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
    credentials: 'omit',
  });
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    onSignedOut();
    throw new HttpError(401, 'Signed out: sign in again.');
  }
  const text = await response.text();
  const data = (
    text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text
  ) as T;
  if (!response.ok) {
    const message = (data as Json)?.message;
    throw new HttpError(response.status, typeof message === 'string' ? message : `HTTP ${response.status}`);
  }
  return data;
}
