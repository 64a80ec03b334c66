/**
 * The whole service on one machine: the same handlers, the same state machine file and a real DynamoDB
 * engine, wired with the local workflow runner and the simulated carrier. `npm start` and the
 * integration tests both build it here.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { buildApi, buildReceiptHandler, type ApiHandler } from '../functions/http/api';
import { buildOpenApiDocument } from '../functions/http/openapi';
import type { ApiKeyGuard } from '../functions/http/middleware';
import { buildDeps, logSettled, type Deps } from '../functions/runtime';
import { tableFromEnv } from '../functions/wiring/dynamo';
import {
  restartStalledDeliveries,
  settleOverdueDeliveries,
  sweepDeliveries,
} from '../functions/core/sweeper';
import type { DeliveryWorkflow } from '../functions/core/ports';
import { deriveKey } from '../functions/adapters/crypto';
import { jsonLogger, type Logger } from '../functions/adapters/logger';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { dirname, join } from 'node:path';
import { SimulatedCarrier, carrierRuleSchema, type ChannelBehaviour } from './carrier';
import { startHttpServer, type LocalRoute, type Route } from './server';
import { startLocalWebhooks, type LocalWebhooks } from './webhooks';
import { startLocalGuard, type LocalGuard } from './guard';
import { LocalWorkflow } from './workflow';
import { deliverGrants } from './provider-grants';
import type { IamStatement } from './iam';
import { ProviderSimulator, type ReceiptNoise, type SimulatorRequest } from './provider-simulator';
import type { SNSEvent } from 'aws-lambda';
import { buildSnsReceiptHandler } from '../functions/receipts/handlers';
import { inlineVonageCredentials, providersFromEnv } from '../functions/wiring/providers';
import { awsSendersFromEnv } from '../functions/wiring/provider-senders';
import { DynamoReplayGuard } from '../functions/adapters/dynamodb/receipt-tokens';
import type { Env } from '../functions/wiring/env';
import { FUNCTIONS, ROUTES, type FunctionName } from '../lib/functions';
import { isProviderCheckEvent, runProviderCheckFromEnv } from '../functions/wiring/provider-check';
import type { CheckClock } from '../functions/adapters/providers/check';
import { buildConsoleHandler } from '../functions/console/routes';
import { consoleIssueMessage } from '../functions/console/issue-message';
import { buildConsoleDeps } from '../functions/wiring/console';
import { buildConsoleAssets } from '../lib/console-assets';
import { LocalConsoleAuth, localSignInRoute } from './console-auth';

/** Where a running `npm start` says how to reach it (read by `npm run admin`). */
export const LOCAL_STACK_STATE_FILE = join(__dirname, '..', '.cache', 'local-stack.json');

export interface LocalStackState {
  baseUrl: string;
  dynamoEndpoint: string;
  tableName: string;
  /** The local stack's master key: `webhook add` and `webhook rotate` seal new signing secrets with it. */
  masterKey?: string;
}

export function writeLocalStackState(state: LocalStackState): void {
  mkdirSync(dirname(LOCAL_STACK_STATE_FILE), { recursive: true });
  // It holds the local master key: readable by this user only.
  writeFileSync(LOCAL_STACK_STATE_FILE, JSON.stringify(state), { mode: 0o600 });
  chmodSync(LOCAL_STACK_STATE_FILE, 0o600);
}

/** The running local stack, or undefined when `npm start` is not running. */
export function readLocalStackState(): LocalStackState | undefined {
  if (!existsSync(LOCAL_STACK_STATE_FILE)) return undefined;
  return JSON.parse(readFileSync(LOCAL_STACK_STATE_FILE, 'utf8')) as LocalStackState;
}

export interface LocalStackOptions {
  dynamoEndpoint: string;
  tableName: string;
  masterKey: string;
  /** 0 picks a free port. */
  port?: number;
  /** Settings (`OTP_*`) and other environment; defaults to this process's environment. */
  env?: Record<string, string | undefined>;
  logger?: Logger;
  /** Replace adapters, e.g. a fake clock in tests. */
  override?: Partial<Omit<Deps, 'workflow' | 'store'>>;
  /** The service's DynamoDB client, e.g. one whose middleware fails chosen calls (reliability tests). */
  dynamoClient?: DynamoDBDocumentClient;
  /** Wraps the workflow the handlers and the sweeper start, e.g. to make StartExecution fail (tests). */
  wrapWorkflow?: (workflow: DeliveryWorkflow) => DeliveryWorkflow;
  carrierDefault?: ChannelBehaviour;
  /** How often the stalled-delivery sweeper runs, as the scheduled Lambda does every minute on AWS; 0: never. */
  sweepIntervalMs?: number;
  /**
   * Runs the real provider adapters (aws-sms for sms and rcs, aws-whatsapp, vonage for viber; sna stays on the
   * carrier) against the provider simulator (local/provider-simulator.ts), which follows the carrier's rules.
   */
  providerSimulator?: boolean | LocalProviderSimulatorOptions;
  /**
   * Runs the pumping guard's stream consumer (local/guard.ts), as the GuardSignals Lambda does on AWS: the rules
   * (sequential numbers, surges, novelty) block. Off by default here (tests and benches that send many made-up
   * numbers from one service); `npm start` turns it on unless OTP_GUARD_CONSUMER=off. `intervalMs`: how often an
   * idle stream is read (default 1 s).
   */
  guardConsumer?: boolean | { intervalMs: number };
  /**
   * Paces `providers check`'s dry runs (one every 250 ms, DryRun's rate on AWS); the system's clock by default.
   * The simulator enforces no rate, so tests lend a clock that counts the waits without waiting.
   */
  providerCheckClock?: CheckClock;
  /** Time-outs imposed on route functions (none by default: `Route.timeoutMs`), e.g. a send short of time. */
  functionTimeoutsMs?: Partial<Record<FunctionName, number>>;
  /** The API's unknown-key guard (a deployed function's own by default), e.g. one with a smaller bucket. */
  apiKeyGuard?: ApiKeyGuard;
}

/** What tests may change in the provider simulator. */
export interface LocalProviderSimulatorOptions {
  /** Duplicates and reordering of the receipts (local/provider-simulator.ts ReceiptNoise). */
  receiptNoise?: Partial<ReceiptNoise>;
  /** Changes the synthesized grants the AWS calls are authorized by (a test taking one away). */
  grants?: (synthesized: IamStatement[]) => IamStatement[];
  /** Told of each request the simulator refused as invalid or unauthorized. */
  onRefusal?: (request: SimulatorRequest) => void;
}

export interface LocalStack {
  url: string;
  deps: Deps;
  carrier: SimulatedCarrier;
  /** The provider simulator, when `providerSimulator` is set. */
  providerSimulator?: ProviderSimulator;
  workflow: LocalWorkflow;
  /** The events handler on the table's stream, the webhook queue and sender, the receiver and the log. */
  webhooks: LocalWebhooks;
  /** The guard's stream consumer, when `guardConsumer` is set. */
  guard?: LocalGuard;
  /** Runs the sweeper's restart of stalled deliveries once (it also runs every `sweepIntervalMs`). */
  sweep(): Promise<string[]>;
  /** Runs the sweeper's settling of overdue deliveries once (also every `sweepIntervalMs`); their SIDs. */
  settle(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  let routes: { api: Route[]; local: LocalRoute[] } = { api: [], local: [] };
  const { server, url } = await startHttpServer(options.port ?? 0, () => routes);

  // The provider simulator's objects are bound late: it starts first, since its settings are part of the env.
  const simulated: { carrier?: SimulatedCarrier; sns?: (event: SNSEvent) => Promise<unknown> } = {};
  // The AWS calls are authorized as on AWS: by the deliver function's statements in the synthesized stack.
  const simulatorOptions =
    typeof options.providerSimulator === 'object'
      ? options.providerSimulator
      : options.providerSimulator
        ? {}
        : undefined;
  const synthesized = simulatorOptions
    ? deliverGrants(ProviderSimulator.cdkContext(), ProviderSimulator.scope)
    : [];
  const grants = simulatorOptions?.grants?.(synthesized) ?? synthesized;
  const simulator = simulatorOptions
    ? await ProviderSimulator.start({
        carrier: () => simulated.carrier!,
        deliverSns: (event) => simulated.sns!(event),
        stackUrl: () => url,
        now: () => deps.clock.now(),
        grants: () => grants,
        ...(simulatorOptions.receiptNoise && { receiptNoise: simulatorOptions.receiptNoise }),
        ...(simulatorOptions.onRefusal && { onRefusal: simulatorOptions.onRefusal }),
      })
    : undefined;
  if (simulator) {
    // The AWS SDK clients sign with fake local credentials (the simulator does not check SigV4), never with a
    // developer's real ones: the environment comes first in the SDK's credential chain.
    process.env.AWS_ACCESS_KEY_ID = 'AKIALOCALSIMULATOR00';
    process.env.AWS_SECRET_ACCESS_KEY = 'local-simulator-secret';
    delete process.env.AWS_SESSION_TOKEN;
  }

  const env = {
    ...simulator?.env(),
    ...(options.env ?? process.env),
    TABLE_NAME: options.tableName,
    DYNAMODB_ENDPOINT: options.dynamoEndpoint,
    OTP_CARRIER_URL: `${url}/_local/carrier`,
    // Webhooks may go to http://127.0.0.1 here (the local receiver); never on AWS.
    OTP_WEBHOOK_ALLOW_PRIVATE: (options.env ?? process.env).OTP_WEBHOOK_ALLOW_PRIVATE ?? 'true',
  };
  const logger = options.logger ?? jsonLogger();
  // One client for the handlers and the state machine's status read (the tests' fault injection sees both).
  const table = tableFromEnv(env, options.dynamoClient);
  // As the deliver task's root does (functions/entries/deliver.ts): the AWS senders, to the simulator's endpoints.
  // A region for their clients only: the table client's (DynamoDB Local keeps tables per region) stays as it is.
  const awsSenders = simulator
    ? awsSendersFromEnv({ ...env, AWS_REGION: (env as Env).AWS_REGION ?? 'us-east-1' })
    : {};
  const base = {
    ...buildDeps(env, options.masterKey, logger, table.client),
    ...(simulator && {
      providers: providersFromEnv(env, options.masterKey, {
        aws: awsSenders,
        replays: new DynamoReplayGuard(table.client, table.tableName),
      }),
    }),
    ...options.override,
  };
  // The deliver function invoked directly, as `npm run admin -- providers check` invokes it on AWS: the check
  // event only (the local workflow runs the delivery steps), with the same settings and senders.
  const invokeDeliver = async (event: unknown) => {
    if (!isProviderCheckEvent(event))
      throw new Error('The local deliver function takes only the check event here');
    const deadline = Date.now() + DELIVER_TIMEOUT_MS;
    return runProviderCheckFromEnv(
      env,
      {
        aws: awsSenders,
        vonageCredentials: inlineVonageCredentials(env),
        ...(options.providerCheckClock && { checkClock: options.providerCheckClock }),
      },
      event,
      () => deadline - Date.now(),
    );
  };
  const carrier = new SimulatedCarrier({
    receiptUrl: () => `${url}/v2/Callbacks/carrier`,
    receiptSecret: deriveKey(options.masterKey, 'receipt:carrier'),
    token: deriveKey(options.masterKey, 'carrier-token').toString('base64url'),
    ...(options.carrierDefault && { defaultBehaviour: options.carrierDefault }),
  });
  // The workflow needs the deps and the deps need the workflow: tie the knot through a late-bound object.
  const deps = { ...base } as Deps;
  simulated.carrier = carrier;
  // The SNS receipt function (functions/entries/snsReceipt.ts), invoked as a topic subscription invokes it.
  simulated.sns = (event) => buildSnsReceiptHandler(deps)(event);
  const workflow = new LocalWorkflow(deps, logger, table);
  deps.workflow = options.wrapWorkflow ? options.wrapWorkflow(workflow) : workflow;
  const webhooks = await startLocalWebhooks({
    env,
    masterKey: options.masterKey,
    dynamoEndpoint: options.dynamoEndpoint,
    tableName: options.tableName,
    store: deps.store,
    clock: deps.clock,
    logger,
  });

  const guard = options.guardConsumer
    ? await startLocalGuard({
        dynamoEndpoint: options.dynamoEndpoint,
        tableName: options.tableName,
        clock: deps.clock,
        logger,
        metrics: deps.metrics,
        ...(typeof options.guardConsumer === 'object' && { intervalMs: options.guardConsumer.intervalMs }),
      })
    : undefined;

  // Which handler serves which route: the manifest's routes (lib/functions.ts), as API Gateway's.
  // The console: its files built in memory once, its sign-in on loopback in place of Cognito's.
  let consoleAssets: ReturnType<typeof buildConsoleAssets> | undefined;
  const consoleAuth = new LocalConsoleAuth(options.masterKey, () => deps.clock.now());
  const consoleDeps = buildConsoleDeps(
    env,
    table,
    options.masterKey,
    logger,
    async () => (consoleAssets ??= buildConsoleAssets()),
    { clock: deps.clock },
  );
  const handlers: Partial<Record<FunctionName, ApiHandler>> = {
    ...buildApi(deps, options.apiKeyGuard),
    receipt: buildReceiptHandler(deps),
    console: buildConsoleHandler(consoleDeps),
  };
  routes = {
    api: ROUTES.map(({ name, method, path, authorizer }) => {
      const handler = handlers[name];
      if (!handler) throw new Error(`The local stack has no handler for the ${name} function's route`);
      return {
        method,
        path,
        handler,
        ...(options.functionTimeoutsMs?.[name] !== undefined && {
          timeoutMs: options.functionTimeoutsMs[name],
        }),
        ...(authorizer === 'console' && {
          authorize: (header: string | undefined) => consoleAuth.verify(header),
        }),
      };
    }),
    local: [
      ...localRoutes(carrier),
      deliverInvokeRoute(invokeDeliver),
      ...webhooks.routes,
      localSignInRoute(consoleAuth, (userId) =>
        consoleDeps.accounts.setOperator({ actor: 'local:sign-in' }, userId, true),
      ),
    ],
  };

  const sweep = () => restartStalledDeliveries(deps);
  // As the sweeper Lambda does (functions/entries/sweeper.ts): a delivery.ended line per settled delivery.
  const settle = async () => {
    const settled = await settleOverdueDeliveries(deps);
    logSettled(logger, settled);
    return settled.map((output) => output.sid);
  };
  // The timer runs the Lambda's one pass (both halves, their sends read in one batch); tests call the halves by hand.
  const sweepBoth = async () => {
    const { restarted, settled, failures, dropped } = await sweepDeliveries(deps);
    if (restarted.length > 0) logger.log('warn', 'sweeper.restarted', { count: restarted.length });
    if (dropped > 0) logger.log('warn', 'sweeper.deferred_dropped', { count: dropped });
    logSettled(logger, settled);
    for (const error of failures) logger.log('error', 'sweeper.failed', { error: String(error) });
  };
  const sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
  const sweeper =
    sweepIntervalMs > 0
      ? setInterval(() => {
          sweepBoth().catch((error: unknown) =>
            logger.log('error', 'sweeper.failed', { error: String(error) }),
          );
        }, sweepIntervalMs).unref()
      : undefined;

  return {
    url,
    deps,
    carrier,
    ...(simulator && { providerSimulator: simulator }),
    workflow,
    webhooks,
    ...(guard && { guard }),
    sweep,
    settle,
    close: async () => {
      clearInterval(sweeper);
      await workflow.idle();
      await carrier.close();
      await simulator?.close();
      // Before the server: a webhook in flight may be posting to the local receiver.
      await webhooks.close();
      await guard?.close();
      await closeServer(server);
    },
  };
}

/** The path `npm run admin` invokes the local deliver function at (the local stand-in for Lambda's Invoke). */
export const LOCAL_DELIVER_INVOKE_PATH = '/_local/functions/deliver/invoke';

/** The deliver function's own time limit on AWS: the local check stops starting checks as it would there. */
const DELIVER_TIMEOUT_MS = FUNCTIONS.deliver.timeoutSeconds * 1000;

/**
 * Lambda's Invoke, locally: the body is the event, the answer the function's result, or, as Lambda reports a
 * function error, `{errorType, errorMessage}` with the header `x-amz-function-error`.
 */
function deliverInvokeRoute(invoke: (event: unknown) => Promise<unknown>): LocalRoute {
  return {
    method: 'POST',
    path: LOCAL_DELIVER_INVOKE_PATH,
    handle: async ({ body }) => {
      try {
        return { status: 200, body: await invoke(JSON.parse(body) as unknown) };
      } catch (error) {
        return {
          status: 200,
          headers: { 'x-amz-function-error': 'Unhandled' },
          body: {
            errorType: error instanceof Error ? error.name : 'Error',
            errorMessage: error instanceof Error ? error.message : String(error),
          },
        };
      }
    },
  };
}

const messageSchema = z.object({
  channel: z.enum(['sms', 'whatsapp', 'viber', 'rcs', 'sna']),
  to: z.string(),
  body: z.string(),
  reference: z.string(),
});

function localRoutes(carrier: SimulatedCarrier): LocalRoute[] {
  const parseJson = (body: string): unknown => {
    try {
      return JSON.parse(body);
    } catch {
      return undefined;
    }
  };
  const openApi = buildOpenApiDocument();
  return [
    // The OpenAPI document of the public API (docs/openapi.json), without an API key.
    { method: 'GET', path: '/openapi.json', handle: () => ({ status: 200, body: openApi }) },
    {
      method: 'GET',
      path: '/_local/messages',
      handle: ({ url }) => ({
        status: 200,
        // A + left unencoded (`?to=+1415…`) arrives as a space; every number carried starts with +.
        body: carrier.messagesTo(url.searchParams.get('to')?.replace(/^ /, '+')).map((message) => ({
          to: message.to,
          channel: message.channel,
          body: message.body,
          outcome: message.outcome,
          time: message.time,
          provider: message.provider ?? 'http-carrier',
        })),
      }),
    },
    {
      method: 'POST',
      path: '/_local/carrier/rules',
      handle: ({ body }) => {
        const json = parseJson(body);
        const invalid = (message: string) => ({ status: 400, body: { code: 'invalid_parameter', message } });
        if (json === undefined) return invalid('The body is not valid JSON.');
        const rule = carrierRuleSchema.safeParse(json);
        if (!rule.success) return invalid(consoleIssueMessage(rule.error.issues[0]!, json));
        carrier.setRule(rule.data);
        return { status: 200, body: rule.data };
      },
    },
    {
      method: 'DELETE',
      path: '/_local/carrier/rules',
      handle: () => (carrier.clearRules(), { status: 200, body: { cleared: true } }),
    },
    {
      // The carrier's own API, called by the service's HTTP carrier adapter.
      method: 'POST',
      path: '/_local/carrier/messages',
      handle: ({ headers, body }) => {
        if (!carrier.isAuthorized(headers.authorization))
          return { status: 401, body: { error: 'unauthorized' } };
        const message = messageSchema.safeParse(parseJson(body));
        if (!message.success) return { status: 400, body: { error: 'bad message' } };
        return carrier.respond(message.data);
      },
    },
  ];
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
