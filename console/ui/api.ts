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

/**
 * How a new token is had without signing in again (auth.ts's `renewSession` on AWS; none on the local stack): true
 * once a new token is in sessionStorage, false when the session is over. It may throw when it got no answer.
 */
let renewer: (() => Promise<boolean>) | undefined;
export function renewWith(renew: () => Promise<boolean>): void {
  renewer = renew;
}

/** The renewal under way: requests that find the token stale at once all wait for this one. */
let renewing: Promise<boolean> | undefined;
function renewOnce(): Promise<boolean> {
  if (!renewer) return Promise.resolve(false);
  renewing ??= renewer().finally(() => (renewing = undefined));
  return renewing;
}

/** A token is renewed this long before its `exp`, so that it does not lapse on its way to the API. */
const RENEW_BEFORE_MS = 60_000;

/** True when the token's `exp` is less than RENEW_BEFORE_MS away (a token the page cannot read: no). */
function expiresSoon(token: string): boolean {
  try {
    const payload = token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/');
    const { exp } = JSON.parse(atob(payload)) as { exp?: unknown };
    return typeof exp === 'number' && exp * 1000 - Date.now() < RENEW_BEFORE_MS;
  } catch {
    return false;
  }
}

/** The token to send: a renewed one first when this one is about to expire and it can be renewed. */
async function freshToken(): Promise<string | null> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  // Not renewed (no answer, or the session is over): it is sent as it is, and a 401 says what happens next.
  if (token && renewer && expiresSoon(token)) await renewOnce().catch(() => false);
  return sessionStorage.getItem(TOKEN_KEY);
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The API's `code` (`invalid_parameter`, `conflict`…); none when the answer was not the API's. */
    readonly code?: string,
  ) {
    super(message);
  }
}

/** What the page says when the request never got an answer (the browser's own words, "Failed to fetch", say nothing). */
const UNREACHABLE =
  'The console could not reach its server: check your connection, then try again (reload the page).';

/** `fetch`, its network failure worded for the user. */
export async function request(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    throw new HttpError(0, UNREACHABLE);
  }
}

/** The message of an answer that is not the API's JSON (a gateway's own page, a time-out): what to do about it. */
export function statusMessage(status: number): string {
  return status >= 500
    ? `The server failed to answer (HTTP ${status}): try again in a moment.`
    : `The server refused the request (HTTP ${status}).`;
}

/**
 * API Gateway's own 429 (`{"message": "Too Many Requests"}`, no `code`): the console API's route throttle, one
 * bucket for every user of the console. The handler's own 429 (`rate_limited`, this user's requests a minute) says
 * itself how long to wait.
 */
const BUSY = 'The console is busy: too many requests from all its users at once. Try again in a few seconds.';

/** The body as JSON when it is some, else undefined (a gateway's HTML error page). */
export function jsonOf(text: string, contentType: string | null): unknown {
  if (!text || !contentType?.includes('json')) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The page the user is on: each navigation (main.ts's `route`) starts a new one. A request made for an older one
 * never settles, so that its page, its error page or the page drawn again after a save cannot land over the page
 * the user went to since; a read is also aborted (a change is not: the server may have made it already).
 */
let navigation = new AbortController();

export function navigated(): void {
  navigation.abort();
  navigation = new AbortController();
}

const superseded = () => new Promise<never>(() => undefined);

export async function api<T = Json>(method: string, path: string, body?: unknown): Promise<T> {
  const { signal } = navigation;
  let response: Response;
  let text: string;
  // At most twice: a token refused (401, the authorizer's answer: the handler did nothing, so a change is safe to
  // send again) is renewed once, and the request sent once more with the new one.
  for (let attempt = 1; ; attempt++) {
    let again = false;
    try {
      const token = await freshToken();
      response = await request(`/console/api${path}`, {
        method,
        headers: {
          ...(token && { authorization: `Bearer ${token}` }),
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        ...(method === 'GET' && { signal }),
        credentials: 'omit',
      });
      text = await response.text();
      if (response.status === 401 && attempt === 1 && token) {
        // Another request may have renewed the token since this one was sent: then it is only sent again.
        const now = sessionStorage.getItem(TOKEN_KEY);
        again = (now !== null && now !== token) || (await renewOnce());
      }
    } catch (error) {
      if (signal.aborted) return superseded();
      throw error;
    }
    if (signal.aborted) return superseded();
    if (!again) break;
  }
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    onSignedOut();
    throw new HttpError(401, 'Signed out: sign in again.');
  }
  const data = jsonOf(text, response.headers.get('content-type'));
  if (!response.ok) {
    const { message, code } = (data as Json | undefined) ?? {};
    if (response.status === 429 && code === undefined) throw new HttpError(429, BUSY);
    throw new HttpError(
      response.status,
      typeof message === 'string' ? message : statusMessage(response.status),
      typeof code === 'string' ? code : undefined,
    );
  }
  if (data === undefined) {
    throw new HttpError(response.status, "The server's answer was not the console's: try again in a moment.");
  }
  return data as T;
}
