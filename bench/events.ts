/**
 * API Gateway HTTP API (payload 2.0) events for calling the handlers in-process, shaped like the ones
 * local/server.ts builds from real HTTP requests.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import type { ApiContext } from '../functions/http/middleware';
import { FUNCTIONS, type FunctionName } from '../lib/functions';

interface EventInput {
  method: 'GET' | 'POST';
  /** The API Gateway route, e.g. `/v2/Services/{ServiceSid}/Verifications`. */
  route: string;
  pathParameters: Record<string, string>;
  headers?: Record<string, string>;
  /** A form body (`application/x-www-form-urlencoded`), as most callers send it. */
  form?: Record<string, string>;
  /** A raw body with its content type. */
  body?: { text: string; contentType: string };
}

function apiGatewayEvent(input: EventInput): APIGatewayProxyEventV2 {
  const path = input.route.replace(/\{(\w+)\}/g, (_, name: string) =>
    encodeURIComponent(input.pathParameters[name] ?? ''),
  );
  const headers: Record<string, string> = {
    host: 'bench.local',
    'user-agent': 'otp-bench',
    ...input.headers,
  };
  let body: string | undefined;
  if (input.form) {
    body = new URLSearchParams(input.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (input.body) {
    body = input.body.text;
    headers['content-type'] = input.body.contentType;
  }
  const now = new Date();
  const requestId = randomUUID();
  return {
    version: '2.0',
    routeKey: `${input.method} ${input.route}`,
    rawPath: path,
    rawQueryString: '',
    headers,
    pathParameters: input.pathParameters,
    requestContext: {
      accountId: 'bench',
      apiId: 'bench',
      domainName: 'bench.local',
      domainPrefix: 'bench',
      http: {
        method: input.method,
        path,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'otp-bench',
      },
      requestId,
      routeKey: `${input.method} ${input.route}`,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body !== undefined && { body }),
    isBase64Encoded: false,
  };
}

/**
 * A fresh Lambda-like context per call (the auth middleware writes the service SID into it), its remaining time
 * counting down from the function's time-out (lib/functions.ts), as Lambda's: the send bounds its charge by it.
 */
export function lambdaContext(functionName: FunctionName): ApiContext {
  const endsAt = Date.now() + FUNCTIONS[functionName].timeoutSeconds * 1000;
  return {
    awsRequestId: randomUUID(),
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'bench',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => endsAt - Date.now(),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

export const ROUTES = {
  send: '/v2/Services/{ServiceSid}/Verifications',
  check: '/v2/Services/{ServiceSid}/VerificationCheck',
  fetch: '/v2/Services/{ServiceSid}/Verifications/{VerificationSid}',
  receipt: '/v2/Callbacks/{Provider}',
} as const;

export interface Caller {
  serviceSid: string;
  apiKey: string;
}

export const sendEvent = (caller: Caller, to: string, idempotencyKey?: string) =>
  apiGatewayEvent({
    method: 'POST',
    route: ROUTES.send,
    pathParameters: { ServiceSid: caller.serviceSid },
    headers: { 'x-api-key': caller.apiKey, ...(idempotencyKey && { 'idempotency-key': idempotencyKey }) },
    form: { To: to },
  });

export const checkEvent = (caller: Caller, verificationSid: string, code: string) =>
  apiGatewayEvent({
    method: 'POST',
    route: ROUTES.check,
    pathParameters: { ServiceSid: caller.serviceSid },
    headers: { 'x-api-key': caller.apiKey },
    form: { VerificationSid: verificationSid, Code: code },
  });

export const fetchEvent = (caller: Caller, verificationSid: string) =>
  apiGatewayEvent({
    method: 'GET',
    route: ROUTES.fetch,
    pathParameters: { ServiceSid: caller.serviceSid, VerificationSid: verificationSid },
    headers: { 'x-api-key': caller.apiKey },
  });

/** A console API request as API Gateway hands it over after its JWT authorizer (the claims it passes on). */
export const consoleEvent = (path: string, claims: Record<string, string>): APIGatewayProxyEventV2 => {
  const event = apiGatewayEvent({ method: 'GET', route: '/console/api/{proxy+}', pathParameters: {} });
  return {
    ...event,
    rawPath: `/console/api${path}`,
    pathParameters: { proxy: path.slice(1) },
    requestContext: { ...event.requestContext, authorizer: { jwt: { claims, scopes: [] } } },
  } as APIGatewayProxyEventV2;
};

export const receiptEvent = (body: string, signature: string, signatureHeader: string) =>
  apiGatewayEvent({
    method: 'POST',
    route: ROUTES.receipt,
    pathParameters: { Provider: 'carrier' },
    headers: { [signatureHeader]: signature },
    body: { text: body, contentType: 'application/json' },
  });
