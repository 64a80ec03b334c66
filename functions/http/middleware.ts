import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { OtpError, isOtpError, type ErrorCode } from '../core/errors';
import type { MetricName, Metrics } from '../core/metrics';
import { classifyApiKey } from '../core/api-key-format';
import type { ApiKeyStore, ApiKeyTagger, Clock, KeyRequestOutcome } from '../core/ports';
import { hashApiKey } from '../adapters/crypto';
import type { Logger } from '../adapters/logger';
import { STATUS_BY_CODE } from './errors';
import { header } from './params';
import { jsonResponse, type HttpResponse } from './response';

export type ApiEvent = APIGatewayProxyEventV2;

/** What authentication established, for the handler. */
export interface ApiContext extends Context {
  serviceSid?: string;
  /**
   * Set by `apiKeyAuth({ overlap: true })`: settles when the key's write has answered, rejecting with the
   * auth or per-key-limit error. The handler may read before it settles and must await it before any write.
   */
  authorized?: Promise<void>;
  /** The console's user (the sign-in token's subject), for the request log. */
  userId?: string;
  /** The route as the handler matched it, when the event's route key is a catch-all (the console's). */
  route?: string;
}

/** An error whose status is not its code's usual one (the console's 415 for a body that is not JSON). */
export class HttpStatusError extends OtpError {
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
  ) {
    super(code, message);
  }
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
          error instanceof HttpStatusError ? error.status : STATUS_BY_CODE[error.code],
          { code: error.code, message: error.message },
          headers,
        );
        return;
      }
      logger.log('error', 'request.failed', {
        requestId: request.event.requestContext?.requestId,
        errorName: error?.name,
        errorMessage: error?.message,
        // Name, message and stack only (the logger drops the error's other properties).
        error,
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
      route: request.context.route ?? request.event.routeKey,
      status: request.response?.statusCode,
      errorCode:
        request.response && request.response.statusCode >= 400 ? errorCodeOf(request.response) : undefined,
      serviceSid: request.context.serviceSid,
      userId: request.context.userId,
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

/**
 * Counts each answer with an error code as `name` with that code as dimension `dimension` (API codes are a
 * closed list: low cardinality). Use it before `errorResponses`, so that its `onError` runs after the error
 * became a response.
 */
export function errorCodeMetric(metrics: Metrics, name: MetricName, dimension: string): ApiMiddleware {
  const count = (request: { response?: HttpResponse | null }) => {
    const response = request.response;
    if (!response || response.statusCode < 400) return;
    const code = errorCodeOf(response);
    if (code !== undefined) metrics.count(name, { [dimension]: code });
  };
  return { after: async (request) => count(request), onError: async (request) => count(request) };
}

function errorCodeOf(response: HttpResponse): string | undefined {
  try {
    return (JSON.parse(response.body) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

/**
 * Per function instance, keeps requests with keys that do not exist from costing a DynamoDB request each:
 * - a key found unknown or revoked is answered 401 from memory for `negativeSeconds`;
 * - legacy keys (core/api-key-format.ts) this instance has not seen work draw on a small token bucket of
 *   lookups; when it is empty, they are answered 429 with `Retry-After: 1` (a real key new to this instance gets
 *   through a second later), while keys that authenticated here recently go straight to their write. A flood of
 *   random legacy-format keys thus costs at most `lookupsPerSecond` requests per instance.
 * Tagged keys whose tag matched never touch the bucket: a made-up key in that format is refused before the guard.
 */
/**
 * A busy multi-tenant instance sees many real keys for the first time; 100 at once and 50 a second more is
 * far above that, and bounds a flood of random keys to 50 DynamoDB writes a second per instance.
 */
export const API_KEY_GUARD_DEFAULTS = {
  negativeSeconds: 60,
  knownSeconds: 600,
  lookupsPerSecond: 50,
  burst: 100,
};

export class ApiKeyGuard {
  private readonly rejected = new Map<string, number>();
  /** Keys that authenticated here, until when they skip the lookup bucket. */
  private readonly known = new Map<string, number>();
  private tokens: number;
  private refilledAt: number;

  constructor(
    readonly options = API_KEY_GUARD_DEFAULTS,
    /** Wall-clock milliseconds: the bucket meters this instance's real request rate, not the service's clock. */
    private readonly wallClock: () => number = Date.now,
  ) {
    this.tokens = options.burst;
    this.refilledAt = wallClock();
  }

  /**
   * Whether a request with this key may make its write now. `tagged`: the key's tag matched, so it is one this
   * deployment issued and goes to its write without drawing on the bucket.
   */
  admit(
    keyHash: string,
    { tagged = false }: { tagged?: boolean } = {},
  ): { admitted: true } | { admitted: false; reason: 'rejected' | 'busy' } {
    const now = this.wallClock();
    const rejectedUntil = this.rejected.get(keyHash);
    if (rejectedUntil !== undefined) {
      if (rejectedUntil > now) return { admitted: false, reason: 'rejected' };
      this.rejected.delete(keyHash);
    }
    if (tagged) return { admitted: true };
    const knownUntil = this.known.get(keyHash);
    if (knownUntil !== undefined && knownUntil > now) return { admitted: true };
    this.tokens = Math.min(
      this.options.burst,
      this.tokens + ((now - this.refilledAt) / 1000) * this.options.lookupsPerSecond,
    );
    this.refilledAt = now;
    if (this.tokens < 1) return { admitted: false, reason: 'busy' };
    this.tokens -= 1;
    return { admitted: true };
  }

  remember(keyHash: string, outcome: KeyRequestOutcome): void {
    const now = this.wallClock();
    // Bounded memory: a caller cycling keys must not grow it without end.
    const bound = (map: Map<string, unknown>) => map.size >= 10_000 && map.clear();
    if (outcome.outcome === 'unknown' || outcome.outcome === 'revoked') {
      bound(this.rejected);
      this.rejected.set(keyHash, now + this.options.negativeSeconds * 1000);
      this.known.delete(keyHash);
    } else if (outcome.outcome === 'allowed' || outcome.outcome === 'limited') {
      bound(this.known);
      this.known.set(keyHash, now + this.options.knownSeconds * 1000);
    }
  }
}

const MAX_API_KEY_LENGTH = 200;

const MINUTE_MS = 60_000;
/** The start (epoch ms) of the fixed one-minute window `now` is in: the per-key and the console's per-user limit. */
export const minuteWindow = (now: number): number => now - (now % MINUTE_MS);
/** A refusal's `Retry-After`: the seconds to the next window, so waiting that long succeeds. */
export const secondsToNextWindow = (window: number, now: number): number =>
  Math.max(1, Math.ceil((window + MINUTE_MS - now) / 1000));

/**
 * `X-API-Key` auth and the per-key limit (docs/api.md) in one write on the key's own item (the key must exist,
 * not be revoked, and belong to the service in the path), so a revocation takes effect at the next request.
 * A fixed one-minute window, refused with 429 `rate_limited` and a `Retry-After` that reaches the next
 * window, so waiting that long succeeds.
 *
 * `overlap`: the key's write is started but not awaited, so the handler's own first read runs beside it (the
 * send: one round trip less on its critical path); `context.authorized` settles with the write. No answer
 * leaves before it settles, and an auth error is the answer whatever the handler did meanwhile (a 400 of a
 * request with a bad key is still a 401).
 */
export function apiKeyAuth(options: {
  store: ApiKeyStore;
  clock: Clock;
  requestsPerMinute: number;
  guard: ApiKeyGuard;
  /** Checks the tag of keys in the tagged format. */
  apiKeyTagger: ApiKeyTagger;
  /** From this instant on, legacy-format keys are refused from memory; absent: they keep working. */
  legacyApiKeysUntil?: Date;
  overlap?: boolean;
}): ApiMiddleware {
  const unauthorized = () => new OtpError('unauthorized', 'Send a valid API key in the X-API-Key header.');
  /** What the key is, from memory: a refusal here costs no DynamoDB request and no token of the guard's bucket. */
  const recognise = async (apiKey: string): Promise<'tagged' | 'legacy'> => {
    const ready = options.apiKeyTagger.ready?.();
    // Only a cold instance's first requests wait here, for the key secret the ring is already reading.
    if (ready) await ready;
    switch (classifyApiKey(apiKey, options.apiKeyTagger)) {
      case 'tagged':
        return 'tagged';
      case 'legacy':
        if (options.legacyApiKeysUntil && options.clock.now() >= options.legacyApiKeysUntil) {
          throw new OtpError('unauthorized', 'This API key is of a retired format; use a key issued since.');
        }
        return 'legacy';
      default:
        // Forged or malformed: the same answer as an unknown key.
        throw unauthorized();
    }
  };
  const authorize = async (request: { event: ApiEvent }, keyHash: string) => {
    const now = options.clock.now().getTime();
    const windowStart = minuteWindow(now);
    const result = await options.store.countKeyRequest({
      keyHash,
      // Any string: a path that names no service matches no key's service.
      serviceSid: request.event.pathParameters?.ServiceSid ?? '',
      windowStart: new Date(windowStart),
      limit: options.requestsPerMinute,
    });
    options.guard.remember(keyHash, result);
    switch (result.outcome) {
      case 'unknown':
      case 'revoked':
        throw unauthorized();
      case 'forbidden':
        // Same answer whether or not the other service exists: a key learns nothing about other accounts.
        throw new OtpError('forbidden', 'This API key does not belong to the service in the path.');
      case 'limited': {
        throw new OtpError(
          'rate_limited',
          'Too many requests for this API key.',
          secondsToNextWindow(result.window, now),
        );
      }
      case 'allowed':
    }
  };
  /** Up to the key's write, started but not awaited; throws at once what memory refuses. */
  const admit = async (request: { event: ApiEvent }, apiKey: string): Promise<{ write: Promise<void> }> => {
    const format = await recognise(apiKey);
    const keyHash = hashApiKey(apiKey);
    const admission = options.guard.admit(keyHash, { tagged: format === 'tagged' });
    if (!admission.admitted) {
      if (admission.reason === 'rejected') throw unauthorized();
      throw new OtpError('rate_limited', 'Too many requests with unknown API keys; retry shortly.', 1);
    }
    return { write: authorize(request, keyHash) };
  };
  return {
    before: async (request) => {
      const apiKey = header(request.event, 'x-api-key');
      if (!apiKey || apiKey.length > MAX_API_KEY_LENGTH) throw unauthorized();
      let authorized: Promise<void>;
      if (options.overlap && options.apiKeyTagger.isReady?.() === false) {
        // A cold instance still reading its key secret: the handler's first read runs beside that read too (a
        // cold send one round trip shorter). A warm one refuses a forged key from memory before anything is read.
        authorized = admit(request, apiKey).then(({ write }) => write);
      } else {
        ({ write: authorized } = await admit(request, apiKey));
      }
      if (!options.overlap) await authorized;
      else {
        // Awaited by `after` or `onError` at the latest; until then a rejection is not unhandled.
        authorized.catch(() => undefined);
        request.context.authorized = authorized;
      }
      // The key belongs to this service once `authorized` has settled without error.
      request.context.serviceSid = request.event.pathParameters?.ServiceSid;
    },
    after: async (request) => {
      await request.context.authorized;
    },
    onError: async (request) => {
      // An auth error takes the place of whatever the handler threw before it awaited the key's write.
      try {
        await request.context.authorized;
      } catch (error) {
        request.error = error as Error;
        // The path named a service the key was not shown to belong to: the request log must not book the
        // refusal to it (anyone could fill another service's lines).
        request.context.serviceSid = undefined;
      }
    },
  };
}
