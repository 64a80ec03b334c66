import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { createHash, timingSafeEqual } from 'node:crypto';
import { OtpError, isOtpError } from '../core/errors';
import type { ApiKeyRecord } from '../core/model';
import type { ApiKeyStore, Clock } from '../core/ports';
import type { Logger } from '../adapters/logger';
import { STATUS_BY_CODE } from './errors';
import { header } from './params';
import { jsonResponse, type HttpResponse } from './response';

export type ApiEvent = APIGatewayProxyEventV2;

/** What authentication established, for the handler. */
export interface ApiContext extends Context {
  serviceSid?: string;
}

type ApiMiddleware = MiddlewareObj<ApiEvent, HttpResponse, Error, ApiContext>;

/** Every error becomes a JSON object with a `code`; an unexpected one is logged and never echoed. */
export function errorResponses(logger: Logger): ApiMiddleware {
  return {
    onError: async (request) => {
      const error = request.error;
      if (isOtpError(error)) {
        const headers: Record<string, string> =
          error.retryAfterSeconds !== undefined ? { 'retry-after': String(error.retryAfterSeconds) } : {};
        request.response = jsonResponse(
          STATUS_BY_CODE[error.code],
          { code: error.code, message: error.message },
          headers,
        );
        return;
      }
      logger.log('error', 'request.failed', {
        requestId: request.event.requestContext?.requestId,
        errorName: error?.name,
        errorMessage: error?.message,
      });
      request.response = jsonResponse(500, {
        code: 'internal_error',
        message: 'Internal error; nothing was charged twice.',
      });
    },
  };
}

/** One log line per request: route, status, duration, service. Never the body, the code or the key. */
export function requestLog(logger: Logger): ApiMiddleware {
  const started = new WeakMap<object, number>();
  const write = (request: { event: ApiEvent; context: ApiContext; response?: HttpResponse | null }) => {
    const begin = started.get(request.event) ?? performance.now();
    logger.log('info', 'request', {
      requestId: request.event.requestContext?.requestId,
      route: request.event.routeKey,
      status: request.response?.statusCode,
      errorCode:
        request.response && request.response.statusCode >= 400 ? errorCodeOf(request.response) : undefined,
      serviceSid: request.context.serviceSid,
      durationMs: Math.round((performance.now() - begin) * 100) / 100,
    });
  };
  return {
    before: async (request) => {
      started.set(request.event, performance.now());
    },
    after: async (request) => write(request),
    onError: async (request) => write(request),
  };
}

function errorCodeOf(response: HttpResponse): string | undefined {
  try {
    return (JSON.parse(response.body) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

export const hashApiKey = (apiKey: string): string => createHash('sha256').update(apiKey).digest('hex');

/**
 * Remembers API keys for a short time so most requests skip the key lookup. A revoked key therefore
 * keeps working on a warm function for up to `ttlSeconds`.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, { record: ApiKeyRecord | undefined; until: number }>();

  constructor(
    private readonly store: ApiKeyStore,
    private readonly clock: Clock,
    private readonly ttlSeconds: number,
  ) {}

  async get(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const now = this.clock.now().getTime();
    const cached = this.entries.get(keyHash);
    if (cached && cached.until > now) return cached.record;
    const record = await this.store.getApiKey(keyHash);
    // Unknown keys are not cached: a caller trying random keys must not fill the memory.
    if (record) {
      if (this.entries.size > 1000) this.entries.clear();
      this.entries.set(keyHash, { record, until: now + this.ttlSeconds * 1000 });
    }
    return record;
  }
}

const MAX_API_KEY_LENGTH = 200;

/**
 * `X-API-Key` auth: the key must exist, not be revoked, and belong to the service in the path. Then the
 * per-key limit of spec 8: a fixed one-minute window, refused with 429 `rate_limited` and a `Retry-After`
 * that reaches the next window, so waiting that long succeeds.
 */
export function apiKeyAuth(options: {
  keys: ApiKeyCache;
  store: ApiKeyStore;
  clock: Clock;
  requestsPerMinute: number;
}): ApiMiddleware {
  return {
    before: async (request) => {
      const apiKey = header(request.event, 'x-api-key');
      if (!apiKey || apiKey.length > MAX_API_KEY_LENGTH) {
        throw new OtpError('unauthorized', 'Send a valid API key in the X-API-Key header.');
      }
      const keyHash = hashApiKey(apiKey);
      const record = await options.keys.get(keyHash);
      if (
        !record ||
        record.revokedAt ||
        !timingSafeEqual(Buffer.from(record.keyHash), Buffer.from(keyHash))
      ) {
        throw new OtpError('unauthorized', 'Send a valid API key in the X-API-Key header.');
      }
      if (request.event.pathParameters?.ServiceSid !== record.serviceSid) {
        // Same answer whether or not the other service exists: a key learns nothing about other accounts.
        throw new OtpError('forbidden', 'This API key does not belong to the service in the path.');
      }
      request.context.serviceSid = record.serviceSid;
      const now = options.clock.now().getTime();
      const windowStart = now - (now % 60_000);
      const allowed = await options.store.countKeyRequest(
        keyHash,
        new Date(windowStart),
        options.requestsPerMinute,
      );
      if (!allowed) {
        const retryAfter = Math.max(1, Math.ceil((windowStart + 60_000 - now) / 1000));
        throw new OtpError('rate_limited', 'Too many requests for this API key.', retryAfter);
      }
    },
  };
}
