/**
 * Serves the handlers over HTTP on loopback, turning each request into the API Gateway HTTP API
 * (payload format 2.0) event the deployed functions receive. Routes under `/_local/` exist only here.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { ApiHandler } from '../functions/http/api';
import type { ApiContext } from '../functions/http/middleware';
import { matchPath, unmatchedRoute } from '../functions/http/routes';

/** API Gateway's own payload limit. */
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

export interface Route {
  /** An HTTP method, or `ANY`. */
  method: string;
  /** API Gateway route path, e.g. `/v2/Services/{ServiceSid}/Verifications`; `{proxy+}` takes the rest. */
  path: string;
  handler: ApiHandler;
  /**
   * Stands in for API Gateway's JWT authorizer: the claims of the request's `Authorization` header, or undefined
   * (401 as API Gateway answers, the handler never called).
   */
  authorize?: (authorization: string | undefined) => Record<string, string> | undefined;
  /**
   * A time-out the context's `getRemainingTimeInMillis` counts down from, as Lambda's (middy then answers at it,
   * and the send bounds its charge by it). None by default: the functions' time-outs are sized for DynamoDB, and
   * DynamoDB Local on a loaded machine is far slower.
   */
  timeoutMs?: number;
}

export interface LocalRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: string;
  /** The peer's address (local routes that answer on loopback only check it). */
  remoteAddress?: string;
}

export type LocalResponse = { status: number; body: unknown; headers?: Record<string, string> };

const LOOPBACK_ADDRESSES = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Whether a request came over loopback and names a loopback host (a DNS-rebound page names another host). */
export function isLoopbackRequest(request: Pick<LocalRequest, 'headers' | 'remoteAddress'>): boolean {
  const host = (request.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
  return LOOPBACK_ADDRESSES.has(request.remoteAddress ?? '') && LOOPBACK_HOSTS.has(host);
}

/** A local-only route (`/_local/...`): plain request in, JSON out. */
export type LocalRoute = {
  method: string;
  path: string;
  handle: (request: LocalRequest) => Promise<LocalResponse> | LocalResponse;
};

export function startHttpServer(
  port: number,
  routes: () => { api: Route[]; local: LocalRoute[] },
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    serve(req, res, routes()).catch((error: unknown) => {
      send(res, 500, { code: 'internal_error', message: 'Local server error' });
      process.stderr.write(`local server: ${String(error)}\n`);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const actualPort = typeof address === 'object' && address ? address.port : port;
      resolve({ server, url: `http://127.0.0.1:${actualPort}` });
    });
  });
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  routes: { api: Route[]; local: LocalRoute[] },
) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const method = (req.method ?? 'GET').toUpperCase();
  const body = await readBody(req);
  // API Gateway's own answer, which an HTTP API cannot shape: no `code` (docs/api.md). The rest of the body is
  // left unread, so the connection cannot carry another request: it is closed, and says so.
  if (body === undefined)
    return send(res, 413, { message: 'Request Entity Too Large' }, { connection: 'close' });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }

  // A path can have a local route per method (`POST` and `DELETE /_local/carrier/rules`).
  const localAtPath = routes.local.filter((route) => route.path === url.pathname);
  if (localAtPath.length > 0) {
    const local = localAtPath.find((route) => route.method === method);
    if (!local) {
      const allow = localAtPath.map((route) => route.method).join(', ');
      return send(res, 405, { code: 'method_not_allowed', message: 'Method not allowed.' }, { allow });
    }
    const request: LocalRequest = {
      method,
      url,
      headers,
      body: body.toString('utf8'),
      ...(req.socket.remoteAddress && { remoteAddress: req.socket.remoteAddress }),
    };
    // Local routes show code-bearing messages and change the carrier: a web page that rebinds its own name to
    // 127.0.0.1 reaches this port from the browser, but its requests still name its host.
    if (!isLoopbackRequest(request))
      return send(res, 403, { code: 'forbidden', message: 'Local routes answer to a loopback host only.' });
    const answer = await local.handle(request);
    return send(res, answer.status, answer.body, answer.headers);
  }

  const matches = routes.api
    .map((route) => ({ route, params: matchPath(route.path, url.pathname) }))
    .filter((match) => match.params !== undefined);
  const match = matches.find((candidate) => [method, 'ANY'].includes(candidate.route.method));
  if (!match) {
    const answer = unmatchedRoute(routes.api, method, url.pathname);
    return send(res, answer.statusCode, undefined, answer.headers, answer.body);
  }
  const claims = match.route.authorize?.(headers.authorization);
  if (match.route.authorize && !claims) return send(res, 401, { message: 'Unauthorized' });
  const event = toApiGatewayEvent(req, url, headers, body, match.route, match.params!, method);
  if (claims) {
    (event.requestContext as unknown as { authorizer: unknown }).authorizer = {
      jwt: { claims, scopes: null },
    };
  }
  const endsAt = match.route.timeoutMs === undefined ? undefined : Date.now() + match.route.timeoutMs;
  const context = {
    awsRequestId: event.requestContext.requestId,
    functionName: `local-${match.route.path}`,
    ...(endsAt !== undefined && { getRemainingTimeInMillis: () => endsAt - Date.now() }),
  };
  const response = await match.route.handler(event, context as unknown as ApiContext);
  send(res, response.statusCode, undefined, response.headers, response.body);
}

function toApiGatewayEvent(
  req: IncomingMessage,
  url: URL,
  headers: Record<string, string>,
  body: Buffer,
  route: Route,
  pathParameters: Record<string, string>,
  method: string,
): APIGatewayProxyEventV2 {
  const now = new Date();
  const contentType = headers['content-type'] ?? '';
  // API Gateway passes text bodies as they are and base64-encodes the rest.
  const isText =
    contentType === '' || /^(text\/|application\/(json|x-www-form-urlencoded|.*\+json))/i.test(contentType);
  const query = Object.fromEntries(url.searchParams);
  return {
    version: '2.0',
    routeKey: `${route.method} ${route.path}`,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(Object.keys(query).length > 0 && { queryStringParameters: query }),
    pathParameters,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: `${route.method} ${route.path}`,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length > 0 && { body: isText ? body.toString('utf8') : body.toString('base64') }),
    isBase64Encoded: body.length > 0 && !isText,
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function send(
  res: ServerResponse,
  status: number,
  json: unknown,
  headers: Record<string, string> = {},
  raw?: string,
) {
  const body = raw ?? JSON.stringify(json);
  res.writeHead(status, {
    'content-type': 'application/json',
    ...headers,
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
