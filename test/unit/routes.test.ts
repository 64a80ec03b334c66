/**
 * A request no route takes: the local server and the deployed API's `$default` route (answered by the fetch
 * function) give the same JSON 404 or 405 with a `code`, from the stack's own route table.
 */
import type { ApiContext, ApiEvent } from '../../functions/http/middleware';
import type { HttpResponse } from '../../functions/http/response';
import { API_ROUTES_ENV, RECEIPT_ROUTE, routesFromEnv, unmatchedRoute } from '../../functions/http/routes';
import { servingOwnUrl } from '../../functions/wiring/entries';
import { ROUTES } from '../../lib/functions';

const TABLE = ROUTES.map(({ method, path }) => `${method} ${path}`);
const answer = (response: HttpResponse) => ({
  status: response.statusCode,
  body: JSON.parse(response.body ?? '{}') as unknown,
  type: response.headers?.['content-type'],
  allow: response.headers?.allow,
});

describe('unmatchedRoute', () => {
  const routes = routesFromEnv(JSON.stringify(TABLE));

  it('reads back the stack route table it is given', () => {
    expect(routes).toEqual(ROUTES.map(({ method, path }) => ({ method, path })));
    expect(routesFromEnv(undefined)).toEqual([]);
  });

  it('answers 405 method_not_allowed for a route path with another method, with Allow naming the right one', () => {
    for (const [method, path, allowed] of [
      ['GET', '/v2/Services/VA123/Verifications', 'POST'],
      ['DELETE', '/v2/Services/VA123/Verifications/VE456', 'GET'],
      ['HEAD', '/v2/Services/VA123/Verifications/VE456', 'GET'],
      ['GET', '/v2/Callbacks/carrier', 'POST'],
    ] as const) {
      expect(answer(unmatchedRoute(routes, method, path))).toEqual({
        status: 405,
        body: { code: 'method_not_allowed', message: `Method not allowed: use ${allowed}.` },
        type: 'application/json',
        allow: allowed,
      });
    }
  });

  it('answers 404 route_not_found for any other path', () => {
    for (const path of [
      '/',
      '/v2',
      '/v2/Services/VA123',
      '/v2/Services//Verifications',
      '/v1/Services/VA1/Verifications',
    ]) {
      expect(answer(unmatchedRoute(routes, 'POST', path))).toMatchObject({
        status: 404,
        body: { code: 'route_not_found' },
      });
    }
  });
});

describe("the fetch function's $default answers", () => {
  it('answer without building anything (no table, no key), from the table in its environment', async () => {
    process.env[API_ROUTES_ENV] = JSON.stringify(TABLE);
    // No TABLE_NAME: building the fetch handler would throw, so a 404 proves nothing was built.
    delete process.env.TABLE_NAME;
    let handler!: (event: ApiEvent, context: ApiContext) => Promise<HttpResponse>;
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- the entry reads its environment when loaded
      ({ handler } = require('../../functions/entries/fetch') as { handler: typeof handler });
    });
    const event = (method: string, rawPath: string) =>
      ({ routeKey: '$default', rawPath, requestContext: { http: { method } } }) as unknown as ApiEvent;
    const context = {} as ApiContext;
    expect(answer(await handler(event('POST', '/v2/Services/VA1/Verifications/VE2'), context))).toMatchObject(
      {
        status: 405,
        body: { code: 'method_not_allowed' },
      },
    );
    expect(answer(await handler(event('GET', '/v2/Services/VA1/Nothing'), context))).toMatchObject({
      status: 404,
      body: { code: 'route_not_found' },
    });
  });
});

describe('the receipt function at its own URL (otp:receiptFunctionUrl)', () => {
  /** A Lambda function URL event: every method and path, route key `$default`, no path parameters. */
  const urlEvent = (method: string, rawPath: string, body = '{}') =>
    ({
      routeKey: '$default',
      rawPath,
      headers: { 'content-type': 'application/json' },
      body,
      isBase64Encoded: false,
      requestContext: { http: { method } },
    }) as unknown as ApiEvent;
  const context = {} as ApiContext;

  it('matches the receipt route itself and fills in its parameter, as API Gateway does', async () => {
    const seen: ApiEvent[] = [];
    const entry = async (event: ApiEvent) => {
      seen.push(event);
      return { statusCode: 200, body: '{"received":true}' } as HttpResponse;
    };
    const handler = servingOwnUrl(entry, RECEIPT_ROUTE);
    const callback = urlEvent('POST', '/v2/Callbacks/vonage', '{"status":"delivered"}');
    expect((await handler(callback, context)).statusCode).toBe(200);
    expect(seen).toEqual([
      { ...callback, routeKey: 'POST /v2/Callbacks/{Provider}', pathParameters: { Provider: 'vonage' } },
    ]);
    // Routed by API Gateway (its route key, its parameters): passed on as it is.
    const routed = {
      ...callback,
      routeKey: `${RECEIPT_ROUTE.method} ${RECEIPT_ROUTE.path}`,
      pathParameters: { Provider: 'carrier' },
    } as ApiEvent;
    await handler(routed, context);
    expect(seen[1]).toBe(routed);
  });

  it('answers anything else with the JSON 404 or 405, building nothing (the real entry, no table, no key)', async () => {
    delete process.env.TABLE_NAME;
    let handler!: (event: ApiEvent, context: ApiContext) => Promise<HttpResponse>;
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- the entry reads its environment when loaded
      ({ handler } = require('../../functions/entries/receipt') as { handler: typeof handler });
    });
    expect(answer(await handler(urlEvent('GET', '/v2/Callbacks/vonage'), context))).toMatchObject({
      status: 405,
      body: { code: 'method_not_allowed' },
    });
    for (const path of [
      '/',
      '/v2/Callbacks',
      '/v2/Callbacks/vonage/extra',
      '/v2/Services/VA1/Verifications',
    ]) {
      expect(answer(await handler(urlEvent('POST', path), context))).toMatchObject({
        status: 404,
        body: { code: 'route_not_found' },
      });
    }
  });
});
