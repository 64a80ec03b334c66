import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CfnStage,
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
  type IHttpRouteAuthorizer,
  HttpRoute as ApiRoute,
  HttpRouteKey,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { OtpConfig } from '../config';
import { API_ROUTES_ENV } from '../../functions/http/routes';
import { FUNCTIONS, ROUTES, type FunctionName, type HttpRoute } from '../functions';
import { Grouping } from './logical-ids';

export interface OtpApiProps {
  config: OtpConfig;
  functions: Record<FunctionName, NodejsFunction>;
  /** The authorizers the manifest's routes name (`authorizer`), made once the API exists (the console's). */
  authorizers?: (api: HttpApi) => Record<NonNullable<HttpRoute['authorizer']>, IHttpRouteAuthorizer>;
}

/**
 * The HTTP API: one route per function of the manifest that has one (payload 2.0 Lambda proxy), the `$default`
 * stage with access logs, and each route's own throttling.
 */
export class OtpApi extends Grouping {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  /** The receipt function's own URL, when receipts do not come through the HTTP API (`otp:receiptFunctionUrl`). */
  readonly receiptUrl: lambda.FunctionUrl | undefined;

  constructor(scope: Construct, id: string, props: OtpApiProps) {
    super(scope, id);
    const { config } = props;
    const api = (this.api = new HttpApi(this, 'Api', {
      description: 'Phone verification (OTP) API',
      // The stage is created below so that it can carry throttling and access logs.
      createDefaultStage: false,
    }));
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: config.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stage = new HttpStage(this, 'ApiDefaultStage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: config.throttleRateLimit, burstLimit: config.throttleBurstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        // No headers, no bodies, no query strings: nothing here can hold an API key or a code.
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            requestTime: '$context.requestTime',
            sourceIp: '$context.identity.sourceIp',
            routeKey: '$context.routeKey',
            path: '$context.path',
            status: '$context.status',
            responseLength: '$context.responseLength',
            responseLatency: '$context.responseLatency',
            integrationStatus: '$context.integration.status',
            integrationLatency: '$context.integration.latency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    this.receiptUrl = this.separateReceipts(props);
    // With receipts on their own URL, the HTTP API has no receipt route: a callback sent to it is a 404.
    const routes = this.receiptUrl ? ROUTES.filter((route) => route.name !== 'receipt') : ROUTES;
    this.throttleRoutes(config, routes);
    const authorizers = props.authorizers?.(api);
    // One integration per function, shared by its routes (the console has several).
    const integrations = new Map<FunctionName, HttpLambdaIntegration>();
    for (const route of routes) {
      if (!integrations.has(route.name)) {
        // Payload format 2.0, as the handlers (and the local stack's HTTP server) expect.
        integrations.set(
          route.name,
          new HttpLambdaIntegration(`${FUNCTIONS[route.name].id}Integration`, props.functions[route.name]),
        );
      }
      const authorizer = route.authorizer && authorizers?.[route.authorizer];
      if (route.authorizer && !authorizer)
        throw new Error(`No authorizer ${route.authorizer} for ${route.path}`);
      api.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: integrations.get(route.name)!,
        ...(authorizer && { authorizer }),
      });
    }
    // A request that matches no route gets the JSON 404 or 405 with a `code` (docs/api.md) that the local stack
    // gives, not API Gateway's own `{"message":"Not Found"}`: the fetch function answers the `$default` route from
    // the route table below (functions/http/routes.ts), without reading anything.
    const fetchIntegration = integrations.get('fetch');
    if (!fetchIntegration) throw new Error('The fetch function serves no route');
    new ApiRoute(api, 'UnmatchedRoute', {
      httpApi: api,
      routeKey: HttpRouteKey.DEFAULT,
      integration: fetchIntegration,
    });
    props.functions.fetch.addEnvironment(
      API_ROUTES_ENV,
      JSON.stringify(routes.map((route) => `${route.method} ${route.path}`)),
    );
    // The handlers of the public API authenticate every request themselves (X-API-Key looked up by hash in the
    // table, or the provider's receipt signature), so those routes have no authorizer; the console's API routes
    // have the user pool's JWT authorizer, and its page and files are public.
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Authorization is done in the handlers: X-API-Key (spec part 5) checked against the table by hash, and ' +
        'receipts by the provider signature. An API Gateway authorizer would add a second lookup per request. ' +
        "The console's API routes have a Cognito JWT authorizer; its page and script are public files. " +
        '$default answers 404 or 405 only, reading nothing.',
    });
  }

  /**
   * Receipts must not wait behind the public API: a receipt that comes late makes the workflow pay for the next
   * channel. The receipt route has its own throttling (throttleRoutes), set for the carrier's receipt rate alone.
   *
   * Lambda concurrency is the other shared pool: a flood of sends, checks or junk-key requests can use the
   * account's whole unreserved concurrency, and receipts then get throttled too. Reserving concurrency for the
   * receipt function closes that, but it is off by default: a reservation leaves the account's other functions
   * at least 100 unreserved, so on an account whose limit is still the new-account 10 (or any limit under
   * 100 + N) the deploy fails. With a normal limit (1,000) set `otp:receiptReservedConcurrency`: a receipt takes
   * tens of milliseconds, so 10 carries several hundred receipts a second. It is also a ceiling: receipts
   * beyond it are throttled (the carrier retries them).
   *
   * With that reservation, `otp:receiptFunctionUrl` moves the callbacks off the HTTP API onto the receipt
   * function's own URL (no authorization: the provider's signature is checked in the handler, as on the API),
   * where the reservation is the route's throttle: each callback then costs an invocation and no API Gateway
   * request (a provider sends two or three callbacks per message; docs/bench.md, "Cost model"). Returns that URL.
   */
  private separateReceipts({ config, functions }: OtpApiProps): lambda.FunctionUrl | undefined {
    if (config.receiptReservedConcurrency !== undefined) {
      (functions.receipt.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions =
        config.receiptReservedConcurrency;
    }
    if (config.receiptFunctionUrl) {
      return functions.receipt.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE });
    }
    return undefined;
  }

  /**
   * One flood must not stop everyone: each route gets its own token bucket (stage RouteSettings keyed by route
   * key; HttpStage has no property for them), sized for its group: the public API for its capacity target, the
   * console small, the receipts for the receipts of that send rate (docs/deploy.md, "Throttling"). The stage's
   * default then limits only `$default`. All of them together still share the account's regional quota.
   */
  private throttleRoutes(config: OtpConfig, routes: typeof ROUTES): void {
    const api = { rate: config.apiThrottleRateLimit, burst: config.apiThrottleBurstLimit };
    // A verification is one send, one check and two fetches.
    const byFunction: Partial<Record<FunctionName, { rate: number; burst: number }>> = {
      send: api,
      check: api,
      fetch: { rate: 2 * api.rate, burst: 2 * api.burst },
      receipt: { rate: config.receiptThrottleRateLimit, burst: config.receiptThrottleBurstLimit },
      console: { rate: config.consoleThrottleRateLimit, burst: config.consoleThrottleBurstLimit },
    };
    const settings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
    for (const route of routes) {
      const limit = byFunction[route.name];
      // A new route without a limit of its own would fall back to the stage's small default unnoticed.
      if (!limit) throw new Error(`No throttle for the route ${route.path} of ${route.name}`);
      settings[`${route.method} ${route.path}`] = {
        ThrottlingRateLimit: limit.rate,
        ThrottlingBurstLimit: limit.burst,
      };
    }
    (this.stage.node.defaultChild as CfnStage).routeSettings = settings;
  }
}
