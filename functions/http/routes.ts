/**
 * Requests that match no route of the API: 404 `route_not_found`, or 405 `method_not_allowed` when the path is
 * a route's with another method. One rule for the local stack's server (local/server.ts) and the deployed API's
 * `$default` route (functions/entries/fetch.ts), so both answer the same JSON error with a `code`.
 */
import { jsonResponse, type HttpResponse } from './response';

/** A route of the API: its method and path template (`/v2/Services/{ServiceSid}/Verifications`, `{proxy+}`). */
export interface RouteKey {
  method: string;
  path: string;
}

/**
 * The provider's delivery receipts: on the HTTP API, or on the receipt function's own URL (the same path there,
 * matched by functions/wiring/entries.ts `servingOwnUrl`). The stack's manifest (lib/functions.ts) takes it from
 * here.
 */
export const RECEIPT_ROUTE = { method: 'POST', path: '/v2/Callbacks/{Provider}' } as const satisfies RouteKey;

/** The template's parameters when `path` matches it (`{name}` one segment, a last `{name+}` one or more). */
export function matchPath(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/');
  const have = path.split('/');
  const params: Record<string, string> = {};
  const greedy = want[want.length - 1]?.endsWith('+}');
  if (greedy && have.length >= want.length) {
    // `{proxy+}`: the rest of the path, one or more segments.
    const rest = have.slice(want.length - 1).join('/');
    if (rest === '') return undefined;
    const params = matchPath(want.slice(0, -1).join('/'), have.slice(0, want.length - 1).join('/'));
    return params && { ...params, [want[want.length - 1]!.slice(1, -2)]: rest };
  }
  if (want.length !== have.length) return undefined;
  for (let i = 0; i < want.length; i++) {
    const segment = want[i]!;
    const actual = have[i]!;
    if (segment.startsWith('{')) {
      if (actual === '') return undefined;
      try {
        params[segment.slice(1, -1)] = decodeURIComponent(actual);
      } catch {
        params[segment.slice(1, -1)] = actual;
      }
    } else if (segment !== actual) return undefined;
  }
  return params;
}

/**
 * The answer to a request no route took: 405 if some route has its path, with `Allow` naming the methods that
 * path takes (RFC 9110 requires it on a 405), 404 otherwise.
 */
export function unmatchedRoute(routes: readonly RouteKey[], method: string, path: string): HttpResponse {
  const allowed = [
    ...new Set(routes.filter((route) => matchPath(route.path, path) !== undefined).map((r) => r.method)),
  ].sort();
  return allowed.length > 0
    ? jsonResponse(
        405,
        { code: 'method_not_allowed', message: `Method not allowed: use ${allowed.join(' or ')}.` },
        { allow: allowed.join(', ') },
      )
    : jsonResponse(404, { code: 'route_not_found', message: 'No such route.' });
}

/** The environment variable that carries the route table to the function answering `$default`. */
export const API_ROUTES_ENV = 'OTP_API_ROUTES';

/**
 * The routes a deployed function is told of (`OTP_API_ROUTES`, set by the stack from its route table as
 * `["POST /v2/...", ...]`): the function cannot import the CDK app's manifest.
 */
export function routesFromEnv(value: string | undefined): RouteKey[] {
  if (!value) return [];
  const parsed = JSON.parse(value) as unknown;
  if (!Array.isArray(parsed)) return [];
  return parsed.flatMap((entry) => {
    const match = typeof entry === 'string' ? /^([A-Z]+) (\/\S*)$/.exec(entry) : null;
    return match ? [{ method: match[1]!, path: match[2]! }] : [];
  });
}
