import middy from '@middy/core';
import {
  checkVerification,
  fetchVerification,
  type CheckDeps,
  type CheckOutcome,
  type FetchDeps,
} from '../core/check';
import { acceptReceipt } from '../core/delivery';
import { OtpError } from '../core/errors';
import { METRIC, noMetrics, type MetricName, type Metrics } from '../core/metrics';
import type {
  ApiKeyStore,
  ApiKeyTagger,
  Clock,
  CodeVault,
  DeliveryStore,
  DeliveryWorkflow,
  DeliverySweepStore,
  Random,
  VerificationStore,
} from '../core/ports';
import type { ProviderRegistry } from '../core/providers';
import type { Channel } from '../core/routing';
import { replayAcceptedSend, sendVerification, type SendDeps } from '../core/send';
import type { Settings } from '../core/settings';
import type { Logger } from '../adapters/logger';
import {
  ApiKeyGuard,
  apiKeyAuth,
  errorCodeMetric,
  errorResponses,
  requestLog,
  type ApiContext,
  type ApiEvent,
} from './middleware';
import {
  MAX_IDEMPOTENCY_KEY_LENGTH,
  checkParamsSchema,
  header,
  readBodyParams,
  sendParamsSchema,
  validate,
} from './params';
import { jsonResponse, type HttpResponse } from './response';

/** What the HTTP handlers are built from; the Lambda entries and the local stack each wire their own. */
export interface ApiDeps {
  store: VerificationStore & ApiKeyStore & DeliveryStore & DeliverySweepStore;
  workflow: DeliveryWorkflow;
  providers: ProviderRegistry;
  vault: CodeVault;
  random: Random;
  clock: Clock;
  settings: Settings;
  apiKeyTagger: ApiKeyTagger;
  /** Legacy-format API keys are refused from this instant on (`OTP_LEGACY_API_KEYS_UNTIL`); absent: never. */
  legacyApiKeysUntil?: Date;
  /** Channels this deployment may use at all. */
  allowedChannels: readonly Channel[];
  logger: Logger;
  /** Sends accepted and refused, checks by outcome, receipts; none when absent. */
  metrics?: Metrics;
}

export type ApiHandler = (event: ApiEvent, context: ApiContext) => Promise<HttpResponse>;

/** What every endpoint needs: logging, metrics, and the key's item for auth and the per-key limit. */
interface EndpointDeps {
  store: ApiKeyStore;
  clock: Clock;
  settings: Pick<Settings, 'keyRequestsPerMinute'>;
  /** Checks the tag of a key in memory, before its lookup (core/api-key-format.ts). */
  apiKeyTagger: ApiKeyTagger;
  legacyApiKeysUntil?: Date;
  logger: Logger;
  metrics?: Metrics;
}

/**
 * Each endpoint's own dependencies. The Lambda entries build one endpoint each (functions/entries/), so the check
 * and fetch bundles hold neither the send path nor what it needs (number parsing and its metadata, routing,
 * providers).
 */
export type SendEndpointDeps = EndpointDeps & SendDeps;
export type CheckEndpointDeps = EndpointDeps & CheckDeps;
export type FetchEndpointDeps = EndpointDeps & FetchDeps;

const CHECK_STATUS: Record<CheckOutcome, number> = {
  verified: 200,
  wrong_code: 422,
  locked: 409,
  expired: 409,
  already_verified: 409,
};

/** Error answers of a send count as refused sends, of a check as checks, each by its error code. */
const SENDS_REFUSED = { name: METRIC.sendsRefused, dimension: 'code' } as const;
const CHECKS_BY_OUTCOME = { name: METRIC.checks, dimension: 'outcome' } as const;

/**
 * An endpoint behind logging, error mapping, API-key auth and the per-key limit. `refused`: each error answer
 * (auth and the per-key limit included) counts as `refused` with its code.
 */
function authenticated(
  deps: EndpointDeps,
  guard: ApiKeyGuard,
  refused?: { name: MetricName; dimension: string },
  overlap = false,
) {
  return middy<ApiEvent, HttpResponse, Error, ApiContext>()
    .use(requestLog(deps.logger))
    .use(refused ? [errorCodeMetric(deps.metrics ?? noMetrics, refused.name, refused.dimension)] : [])
    .use(errorResponses(deps.logger))
    .use(
      apiKeyAuth({
        guard,
        store: deps.store,
        clock: deps.clock,
        requestsPerMinute: deps.settings.keyRequestsPerMinute,
        apiKeyTagger: deps.apiKeyTagger,
        legacyApiKeysUntil: deps.legacyApiKeysUntil,
        overlap,
      }),
    );
}

/** Kept back from the function's remaining time for the answer itself: the response, the log and metric lines. */
const ANSWER_MARGIN_MS = 1000;

/** The invocation's time left to answer, where the runtime tells it (a Lambda context does; a bare test's not). */
const timeLeftOf = (context: ApiContext): (() => number) | undefined =>
  typeof context.getRemainingTimeInMillis === 'function'
    ? () => context.getRemainingTimeInMillis() - ANSWER_MARGIN_MS
    : undefined;

/** `POST /v2/Services/{ServiceSid}/Verifications`. `guard`: shared by the endpoints of one process. */
export function buildSendHandler(deps: SendEndpointDeps, guard = new ApiKeyGuard()): ApiHandler {
  const metrics = deps.metrics ?? noMetrics;
  // The send overlaps the key's write with its first read (core/send.ts awaits it before writing).
  return authenticated(deps, guard, SENDS_REFUSED, true).handler(async (event, context) => {
    const idempotencyKey = header(event, 'idempotency-key') || undefined;
    if (idempotencyKey !== undefined && idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw new OtpError(
        'invalid_parameter',
        `Idempotency-Key is longer than ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`,
      );
    }
    let params: ReturnType<typeof validate<typeof sendParamsSchema>>;
    try {
      params = validate(sendParamsSchema, readBodyParams(event), { Code: 'invalid_code' });
    } catch (refusal) {
      // The key of an accepted send replays it whatever the repeat's parameters say, even if `To` differs.
      if (!idempotencyKey) throw refusal;
      const replayed = await replayAcceptedSend(deps, {
        serviceSid: context.serviceSid!,
        idempotencyKey,
        authorized: context.authorized,
      });
      if (!replayed) throw refusal;
      return jsonResponse(201, replayed.verification, { 'idempotent-replayed': 'true' });
    }
    const result = await sendVerification(deps, {
      serviceSid: context.serviceSid!,
      to: params.To,
      templateSid: params.TemplateSid,
      riskCheckDisabled: params.RiskCheck === 'disable',
      code: params.Code,
      idempotencyKey,
      authorized: context.authorized,
      timeLeftMs: timeLeftOf(context),
    });
    if (!result.deliveryStarted) {
      deps.logger.log('error', 'delivery.start_failed', {
        sid: result.verification.sid,
        serviceSid: context.serviceSid,
      });
    }
    // A replay charged nothing: only new verifications count (conversion = verified / accepted).
    if (!result.replayed) metrics.count(METRIC.sendsAccepted);
    return jsonResponse(201, result.verification, result.replayed ? { 'idempotent-replayed': 'true' } : {});
  });
}

/**
 * `POST /v2/Services/{ServiceSid}/VerificationCheck`. Checks by outcome: the check's five here, an error
 * answer (not found, client_code, ...) by its code.
 */
export function buildCheckHandler(deps: CheckEndpointDeps, guard = new ApiKeyGuard()): ApiHandler {
  const metrics = deps.metrics ?? noMetrics;
  return authenticated(deps, guard, CHECKS_BY_OUTCOME).handler(async (event, context) => {
    const params = validate(checkParamsSchema, readBodyParams(event));
    const result = await checkVerification(deps, {
      serviceSid: context.serviceSid!,
      verificationSid: params.VerificationSid,
      code: params.Code,
    });
    metrics.count(METRIC.checks, { outcome: result.outcome });
    return jsonResponse(CHECK_STATUS[result.outcome], result.verification);
  });
}

/** `GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}`. */
export function buildFetchHandler(deps: FetchEndpointDeps, guard = new ApiKeyGuard()): ApiHandler {
  // A fetch only reads: its read runs beside the key's write, whose outcome still decides the answer (the
  // middleware holds the answer until the write settles, and an auth error wins). A check cannot: its write
  // spends an attempt, which only an authorized caller may do.
  return authenticated(deps, guard, undefined, true).handler(async (event, context) => {
    const verification = await fetchVerification(deps, {
      serviceSid: context.serviceSid!,
      verificationSid: event.pathParameters?.VerificationSid ?? '',
    });
    return jsonResponse(200, verification);
  });
}

/** The three endpoints of the API in one process (the local stack, the bench, tests), sharing one key guard. */
export function buildApi(
  deps: ApiDeps,
  guard = new ApiKeyGuard(),
): { send: ApiHandler; check: ApiHandler; fetch: ApiHandler } {
  return {
    send: buildSendHandler(deps, guard),
    check: buildCheckHandler(deps, guard),
    fetch: buildFetchHandler(deps, guard),
  };
}

/** `POST /v2/Callbacks/{Provider}`: delivery receipts, believed only with the provider's valid signature. */
export function buildReceiptHandler(
  deps: Pick<ApiDeps, 'store' | 'providers' | 'clock' | 'logger' | 'metrics'>,
): ApiHandler {
  return middy<ApiEvent, HttpResponse, Error, ApiContext>()
    .use(requestLog(deps.logger))
    .use(errorResponses(deps.logger))
    .handler(async (event) => {
      const raw = event.body ?? '';
      const body = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
      const provider = event.pathParameters?.Provider ?? '';
      if (!deps.providers.byName(provider)) throw new OtpError('route_not_found', 'Unknown provider.');
      const result = await acceptReceipt(deps, provider, { headers: lowerCaseHeaders(event.headers), body });
      if (result === 'invalid')
        throw new OtpError('invalid_signature', 'The receipt signature is not valid.');
      deps.logger.log('info', 'receipt', { provider, result });
      // Unknown and duplicate receipts are acknowledged too, so the provider stops retrying them.
      return jsonResponse(200, { received: true });
    });
}

const lowerCaseHeaders = (headers: ApiEvent['headers']): Record<string, string | undefined> =>
  Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
