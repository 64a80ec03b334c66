/**
 * The shapes of the Lambda entries: each entry file (functions/entries/, named by its manifest key) is its
 * function's composition root and builds only what its handler uses, once per cold start, on the first
 * invocation (reading key secrets is asynchronous): `coldStart` keeps what it built, `observed` runs each
 * invocation with its logger context and flushes its metrics. Every entry goes through both.
 */
import type { Context } from 'aws-lambda';
import type { DeliveryTaskInput, DeliveryTaskOutput } from '../core/delivery';
import { lambdaLogger, type Logger } from '../adapters/logger';
import { lambdaMetrics, withMetricsFlushed } from '../adapters/metrics';
import type { ApiHandler } from '../http/api';
import type { ApiContext, ApiEvent } from '../http/middleware';
import type { HttpResponse } from '../http/response';
import { matchPath, unmatchedRoute, type RouteKey } from '../http/routes';

/** `build` once per container; a failed build (say, Secrets Manager briefly unreachable) is retried next call. */
export function coldStart<T>(build: () => Promise<T>): () => Promise<T> {
  let built: Promise<T> | undefined;
  return () => {
    if (!built) {
      built = build();
      built.catch(() => {
        built = undefined;
      });
    }
    return built;
  };
}

/**
 * Runs one invocation observed: the logger's lines carry its request id and cold-start flag, and the metrics it
 * recorded are written (EMF) once at its end, whether it succeeded or threw.
 */
export function observed<T>(context: Context | undefined, run: () => Promise<T>): Promise<T> {
  if (context) lambdaLogger().addContext(context);
  return withMetricsFlushed(lambdaMetrics(), run);
}

/**
 * The API's `$default` route, which API Gateway takes for a request that matches no route: answered by `entry`'s
 * function with the same JSON 404 or 405 as the local stack (functions/http/routes.ts), instead of API Gateway's
 * own `{"message":"Not Found"}` without a `code`. Nothing is built, read or counted for it (no key, no table).
 */
export function answeringUnmatchedRoutes(
  entry: (event: ApiEvent, context: ApiContext) => Promise<HttpResponse>,
  apiRoutes: readonly RouteKey[],
) {
  return (event: ApiEvent, context: ApiContext): Promise<HttpResponse> =>
    event.routeKey === '$default'
      ? Promise.resolve(unmatchedRoute(apiRoutes, event.requestContext.http.method, event.rawPath))
      : entry(event, context);
}

/**
 * An HTTP route's function reached at its own URL (a Lambda function URL: the receipt callbacks with
 * `otp:receiptFunctionUrl`), where every method and path arrive as route key `$default` with no path
 * parameters. The route is matched here, and its route key and parameters filled in as API Gateway would; any other
 * request gets the JSON 404 or 405 of an unmatched API route, without building, reading or counting anything.
 * An event that API Gateway routed passes as it is.
 */
export function servingOwnUrl(
  entry: (event: ApiEvent, context: ApiContext) => Promise<HttpResponse>,
  route: RouteKey,
) {
  return (event: ApiEvent, context: ApiContext): Promise<HttpResponse> => {
    if (event.routeKey !== '$default') return entry(event, context);
    const { method } = event.requestContext.http;
    const pathParameters = matchPath(route.path, event.rawPath);
    if (!pathParameters || method !== route.method)
      return Promise.resolve(unmatchedRoute([route], method, event.rawPath));
    // As API Gateway would route it: its route key (the request log's `route`) and its parameters.
    return entry({ ...event, routeKey: `${route.method} ${route.path}`, pathParameters }, context);
  };
}

/** A Lambda entry for an HTTP route. */
export function apiEntry(build: () => Promise<ApiHandler>) {
  const handler = coldStart(build);
  return async (event: ApiEvent, context: ApiContext) =>
    observed(context, async () => (await handler())(event, context));
}

/** A Lambda entry for a state machine task; logs how each delivery ended (its metrics: core/delivery.ts). */
export function taskEntry<D extends { logger: Logger }>(
  build: () => Promise<D>,
  task: (deps: D, input: DeliveryTaskInput) => Promise<DeliveryTaskOutput>,
) {
  const deps = coldStart(build);
  return async (input: DeliveryTaskInput, context?: Context): Promise<DeliveryTaskOutput> =>
    observed(context, async () => {
      const resolved = await deps();
      try {
        const output = await task(resolved, input);
        if (output.next === 'end') logDeliveryEnded(resolved.logger, output);
        return output;
      } catch (error) {
        // Logged here, with its stack mapped to the sources (the runtime's own line for it keeps bundle
        // positions); rethrown so that the state machine retries the task.
        resolved.logger.log('error', 'task.failed', {
          sid: input.sid,
          error: error instanceof Error ? error : new Error(String(error)),
        });
        throw error;
      }
    });
}

/** One line per ended delivery; the failed-delivery alarm reads the `DeliveriesFailed` metric (core/delivery.ts). */
function logDeliveryEnded(logger: Logger, output: DeliveryTaskOutput): void {
  logger.log('info', 'delivery.ended', { sid: output.sid, deliveryStatus: output.deliveryStatus });
}

/**
 * One `delivery.ended` line per delivery the sweeper settled, as the task functions write, and a warning:
 * something stopped a workflow.
 */
export function logSettled(logger: Logger, settled: DeliveryTaskOutput[]): void {
  for (const output of settled) logDeliveryEnded(logger, output);
  if (settled.length > 0) logger.log('warn', 'sweeper.settled', { count: settled.length });
}
