/**
 * The function manifest: every Lambda function of the service, its entry, route, time-out, bundling and the
 * permissions its handler needs. The CDK stack (lib/constructs/), the local stack (local/stack.ts: which handler
 * serves which route), the bench (bench/bundles.ts) and the tests read it; nothing else lists the functions.
 *
 * Plain data: no aws-cdk-lib import, so the local stack and the bench load it cheaply.
 */
import { worstCallMs } from '../functions/adapters/dynamodb/client';
import type { PartitionFamily } from '../functions/adapters/dynamodb/keys';
import type { KeyGroup } from '../functions/adapters/keyring';
import { RECEIPT_ROUTE } from '../functions/http/routes';

export type FunctionName =
  | 'send'
  | 'check'
  | 'fetch'
  | 'receipt'
  | 'deliver'
  | 'afterWait'
  | 'sweeper'
  | 'webhookEvents'
  | 'guardSignals'
  | 'webhookSender'
  | 'console';

/** DynamoDB actions on the table, allowed only on items whose partition key is of one of `families`. */
interface TableGrant {
  actions: string[];
  families: PartitionFamily[];
  /** Granted only when the deployment uses this provider (lib/provider-config.ts). */
  onlyWithProvider?: ProviderSecretName;
}

/** The webhook queues a function may send to (lib/constructs/webhook-delivery.ts creates them). */
export type WebhookQueueName = 'webhookQueue' | 'webhookDeadLetterQueue';

/** An AWS SDK v3 client package a function's bundle may import (the runtime provides it). */
export type AwsClient =
  | '@aws-sdk/client-dynamodb'
  | '@aws-sdk/client-pinpoint-sms-voice-v2'
  | '@aws-sdk/client-secrets-manager'
  | '@aws-sdk/client-sfn'
  | '@aws-sdk/client-socialmessaging'
  | '@aws-sdk/client-sqs';

/**
 * The AWS messaging providers a function sends through (functions/adapters/providers/): their SDK client is in its
 * bundle, and when the deployment configures the provider (lib/provider-config.ts) it gets the send permission on
 * exactly the configured identities' ARNs (lib/constructs/providers.ts): `sms-voice:SendTextMessage` for aws-sms,
 * `social-messaging:SendWhatsAppMessage` for aws-whatsapp.
 */
type AwsSendingProvider = 'aws-sms' | 'aws-whatsapp';
const AWS_SENDING_CLIENT: Record<AwsSendingProvider, AwsClient> = {
  'aws-sms': '@aws-sdk/client-pinpoint-sms-voice-v2',
  'aws-whatsapp': '@aws-sdk/client-socialmessaging',
};

/** Provider credentials kept in Secrets Manager (the stack creates the secret when the provider is in use). */
type ProviderSecretName = 'vonage';

export interface HttpRoute {
  method: 'GET' | 'POST' | 'ANY';
  /** API Gateway's path syntax (`{Name}` parameters, `{proxy+}` for the rest of the path), also the local server's. */
  path: string;
  /**
   * `console`: API Gateway's JWT authorizer of the console's user pool guards the route (lib/constructs/console.ts;
   * the local stack verifies its own loopback sign-in token instead). Otherwise the handler authenticates.
   */
  authorizer?: 'console';
}

export interface FunctionSpec {
  /** Construct id prefix (`${id}Function`, `${id}Role`, `${id}Logs`: logical ids, never change them). */
  id: string;
  /** The Lambda entry, from the repository root; it is the function's composition root. */
  entry: string;
  description: string;
  timeoutSeconds: number;
  /** The HTTP API route it serves, if any. */
  route?: HttpRoute;
  /** More routes it serves (the console: its pages and its API). */
  routes?: HttpRoute[];
  /**
   * Exactly the DynamoDB actions the handler uses, on the table only, each limited (`dynamodb:LeadingKeys`) to
   * the item families it touches them on.
   */
  table: TableGrant[];
  /** Starts the delivery workflow: gets `STATE_MACHINE_ARN` and `states:StartExecution` on it. */
  startsDelivery?: boolean;
  /**
   * The key groups of the purposes the handler uses (functions/adapters/keyring.ts): it gets their secrets' ARNs
   * in its environment and may read those secrets and no other. Empty: no key, no secretsmanager permission.
   */
  keys: KeyGroup[];
  /** The webhook queues it sends to (`sqs:SendMessage`; their URLs in its environment). */
  sendsTo?: WebhookQueueName[];
  /** The AWS messaging providers it sends through (see AwsSendingProvider). */
  sendsWith?: AwsSendingProvider[];
  /**
   * The provider secrets it reads (when the provider is in use: the secret's ARN in its environment,
   * `secretsmanager:GetSecretValue` on it and no other).
   */
  providerSecrets?: ProviderSecretName[];
}

const API_TIMEOUT_SECONDS = 10;
/**
 * The send path's calls, each bounded by the SDK clients' time-outs and retries: the key's write beside the batch
 * read, the accepting transaction, and when its answer is lost, the read that tells whether the charge stands;
 * one call more for a decision taken again after a conflict. Lambda ending the send after its charge would answer
 * 5xx for a charged send, so the charge is written only while the transaction and that read still fit in the time
 * left (core/send.ts `timeLeftMs`); API Gateway's HTTP API waits at most 30 s for its integration.
 */
export const SEND_TIMEOUT_SECONDS = Math.ceil((4 * worstCallMs()) / 1000);
const TASK_TIMEOUT_SECONDS = 30;
const READ_UPDATE = ['dynamodb:GetItem', 'dynamodb:UpdateItem'];

export const FUNCTIONS: Record<FunctionName, FunctionSpec> = {
  send: {
    id: 'Send',
    entry: 'functions/entries/send.ts',
    description: 'POST /v2/Services/{ServiceSid}/Verifications',
    timeoutSeconds: SEND_TIMEOUT_SECONDS,
    route: { method: 'POST', path: '/v2/Services/{ServiceSid}/Verifications' },
    // The accepting TransactWriteItems needs the per-item actions it contains (Put, Update, ConditionCheck):
    // the service's balance and charge line, the verification, the number's send log, the idempotency record;
    // the API key's own item authenticates and counts the request. The one BatchGetItem reads the service, its
    // template, the number, the idempotency record and the pumping guard's state (read only: the guard's consumer
    // writes it), so that action has its own statement naming those families.
    table: [
      {
        actions: ['dynamodb:BatchGetItem'],
        families: ['service', 'number', 'idempotency', 'guard'],
      },
      {
        actions: [
          'dynamodb:GetItem',
          'dynamodb:UpdateItem',
          'dynamodb:PutItem',
          'dynamodb:ConditionCheckItem',
        ],
        families: ['service', 'number', 'idempotency', 'verification', 'apiKey'],
      },
    ],
    startsDelivery: true,
    // Hashes the code (check compares) and seals it for the delivery tasks; checks API key tags.
    keys: ['codeHash', 'codeSeal', 'apiKeyTag'],
  },
  check: {
    id: 'Check',
    entry: 'functions/entries/check.ts',
    description: 'POST /v2/Services/{ServiceSid}/VerificationCheck',
    timeoutSeconds: API_TIMEOUT_SECONDS,
    route: { method: 'POST', path: '/v2/Services/{ServiceSid}/VerificationCheck' },
    table: [{ actions: READ_UPDATE, families: ['verification', 'apiKey'] }],
    keys: ['codeHash', 'apiKeyTag'],
  },
  fetch: {
    id: 'Fetch',
    entry: 'functions/entries/fetch.ts',
    description: 'GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}',
    timeoutSeconds: API_TIMEOUT_SECONDS,
    route: { method: 'GET', path: '/v2/Services/{ServiceSid}/Verifications/{VerificationSid}' },
    // UpdateItem only for the API key's own item (the per-key limit): fetch never writes a verification.
    table: [
      { actions: ['dynamodb:GetItem'], families: ['verification', 'apiKey'] },
      { actions: ['dynamodb:UpdateItem'], families: ['apiKey'] },
    ],
    // It reads a record and shows it: no code key; only the API key tag's.
    keys: ['apiKeyTag'],
  },
  receipt: {
    id: 'Receipt',
    entry: 'functions/entries/receipt.ts',
    description: 'POST /v2/Callbacks/{Provider} (signed delivery receipts)',
    timeoutSeconds: API_TIMEOUT_SECONDS,
    route: RECEIPT_ROUTE,
    // The verification the receipt names (no API key: the carrier's signature authenticates); a Vonage
    // callback's token id, remembered with a conditional put so that a replay is refused.
    table: [
      { actions: READ_UPDATE, families: ['verification'] },
      { actions: ['dynamodb:PutItem'], families: ['receiptToken'], onlyWithProvider: 'vonage' },
    ],
    keys: ['carrier'],
    // Vonage's signature secret checks its signed callbacks.
    providerSecrets: ['vonage'],
  },
  deliver: {
    id: 'Deliver',
    entry: 'functions/entries/deliver.ts',
    description: 'Delivery workflow: hand the message to one channel',
    timeoutSeconds: TASK_TIMEOUT_SECONDS,
    // The verification (claims, outcomes, the end), and the number when every channel rejected it.
    table: [{ actions: READ_UPDATE, families: ['verification', 'number'] }],
    // Opens the sealed code; authenticates to the carrier.
    keys: ['codeSeal', 'carrier'],
    // The only function that sends a message: the AWS providers' clients, Vonage's application key.
    sendsWith: ['aws-sms', 'aws-whatsapp'],
    providerSecrets: ['vonage'],
  },
  afterWait: {
    id: 'AfterWait',
    entry: 'functions/entries/afterWait.ts',
    description:
      'Delivery workflow: after the wait, stop on a receipt or move to the next channel; settle after a task failed',
    timeoutSeconds: TASK_TIMEOUT_SECONDS,
    table: [{ actions: READ_UPDATE, families: ['verification', 'number'] }],
    // No key: it reads the record and moves on or ends the delivery (as the sweeper settles one); it never
    // opens a code or calls a provider, so it reads no key secret and holds no Secrets Manager client.
    keys: [],
  },
  sweeper: {
    id: 'Sweeper',
    entry: 'functions/entries/sweeper.ts',
    description:
      'Every minute: restart deliveries whose workflow did not start, settle those claimed but never ended',
    // Well under the one-minute schedule, so two runs do not overlap.
    timeoutSeconds: 50,
    // Walks the ledger (the directory of services, then each service's charge lines) with its cursor, reads the
    // sends' verifications in batches; settling an overdue delivery ends its verification and, as the workflow's
    // end does, may record the channels that rejected the number.
    table: [
      { actions: ['dynamodb:Query'], families: ['directory', 'service'] },
      { actions: ['dynamodb:BatchGetItem', ...READ_UPDATE], families: ['verification', 'number'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], families: ['sweep'] },
    ],
    startsDelivery: true,
    keys: [],
  },
  webhookEvents: {
    id: 'WebhookEvents',
    entry: 'functions/entries/webhookEvents.ts',
    description: 'Table stream to webhook jobs: an event per status change, a job per enabled endpoint',
    timeoutSeconds: 30,
    // One Query under the service for its endpoints; the stream itself is read through the event source's grant.
    table: [{ actions: ['dynamodb:Query'], families: ['service'] }],
    // It builds and queues events; signing is the sender's job.
    keys: [],
    sendsTo: ['webhookQueue'],
  },
  guardSignals: {
    id: 'GuardSignals',
    entry: 'functions/entries/guardSignals.ts',
    description:
      'Table stream to the pumping guard: sends, checked codes and refusals folded into signals and blocks',
    timeoutSeconds: 60,
    // Its own items (the aggregates, read and written under a version check in one transaction with the state a
    // send reads), the service items read in the same BatchGetItem for the owners' caps, and a count of the
    // directory's services (the global scope is kept only from 4). The stream itself is read through the event
    // source's grant.
    table: [
      { actions: ['dynamodb:BatchGetItem'], families: ['guard', 'service'] },
      { actions: ['dynamodb:PutItem'], families: ['guard'] },
      { actions: ['dynamodb:Query'], families: ['directory'] },
    ],
    keys: [],
  },
  webhookSender: {
    id: 'WebhookSender',
    entry: 'functions/entries/webhookSender.ts',
    description: 'Signs and posts webhooks, retries on the schedule, writes EXPIRED back at expires_at',
    // A batch of up to 10 posts runs at once, each cut off after 5 s.
    timeoutSeconds: 30,
    // GetItem: the endpoint (URL, sealed secret), under its service; PutItem: one delivery record per attempt, in
    // the service's delivery partition; UpdateItem: the expiry write-back. Split so that the sender can write no
    // service item (balance, endpoints) and read no verification.
    table: [
      { actions: ['dynamodb:GetItem'], families: ['service'] },
      { actions: ['dynamodb:PutItem'], families: ['webhookDelivery'] },
      { actions: ['dynamodb:UpdateItem'], families: ['verification'] },
    ],
    // Opens the endpoints' sealed signing secrets.
    keys: ['webhook'],
    // Retries are re-enqueued; deliveries whose retries ran out go to the dead-letter queue.
    sendsTo: ['webhookQueue', 'webhookDeadLetterQueue'],
  },
  console: {
    id: 'Console',
    entry: 'functions/entries/console.ts',
    description: 'Account console: the /console pages and the /console/api JSON API (Cognito JWT authorizer)',
    timeoutSeconds: API_TIMEOUT_SECONDS,
    routes: [
      // The page and its files: public (nothing secret in them); the API they call is not.
      { method: 'GET', path: '/console' },
      { method: 'GET', path: '/console/{asset}' },
      { method: 'ANY', path: '/console/api/{proxy+}', authorizer: 'console' },
    ],
    // What the admin command's stores do, for the console's pages: services, templates, charge lines, key
    // pointers and webhook endpoints under the service; the directory of services (created with the service); an
    // API key's own item (issued and revoked with its pointer in one transaction, so both families are in one
    // statement; its last-used minute read). Memberships are read only (`npm run admin -- member add` writes them);
    // verifications are read, never written.
    table: [
      {
        actions: [
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:Query',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:ConditionCheckItem',
        ],
        families: ['service', 'directory', 'apiKey'],
      },
      // A template removed (in one transaction with the service's template count and the audit record).
      { actions: ['dynamodb:DeleteItem'], families: ['service'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:Query'], families: ['member'] },
      // The webhooks page's and the timeline's delivery records.
      { actions: ['dynamodb:Query'], families: ['webhookDelivery'] },
      // The guard page: the service's guard partition (the caps reached, its blocks), the global scope's state
      // of every served country in one batch read, and a lift by hand (the states and their aggregates' version,
      // in one transaction with the audit record).
      { actions: ['dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem'], families: ['guard'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'], families: ['verification'] },
      // Each API request's count in its user's minute (the per-user limit): one conditional update, nothing else.
      { actions: ['dynamodb:UpdateItem'], families: ['consoleUser'] },
    ],
    // Seals the signing secret of a webhook endpoint added or rotated in the console; tags the keys it issues.
    keys: ['webhook', 'apiKeyTag'],
  },
};

export const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];

/**
 * The receipt functions of the AWS providers, in the stack only when the deployment configures aws-sms or
 * aws-whatsapp (lib/constructs/providers.ts): a deployment on http-carrier has no topic and no rule to feed them.
 */
export type ProviderFunctionName = 'snsReceipt';

export const PROVIDER_FUNCTIONS: Record<ProviderFunctionName, FunctionSpec> = {
  snsReceipt: {
    id: 'SnsReceipt',
    entry: 'functions/entries/snsReceipt.ts',
    description:
      'Delivery receipts of AWS SMS, RCS and WhatsApp from the provider-events SNS topic (invoked by that topic only)',
    timeoutSeconds: API_TIMEOUT_SECONDS,
    // The verification each receipt names; how the event arrived authenticates it (the topic's SourceArn).
    table: [{ actions: READ_UPDATE, families: ['verification'] }],
    keys: [],
  },
};

export const PROVIDER_FUNCTION_NAMES = Object.keys(PROVIDER_FUNCTIONS) as ProviderFunctionName[];

/** The functions that serve an HTTP API route, with their routes, in manifest order. */
export const ROUTES: ({ name: FunctionName } & HttpRoute)[] = FUNCTION_NAMES.flatMap((name) => {
  const { route, routes = [] } = FUNCTIONS[name];
  return [...(route ? [route] : []), ...routes].map((r) => ({ name, ...r }));
});

/**
 * The AWS SDK clients a function's bundle holds, derived from its permissions: a client it has no permission to
 * call is dead weight at cold start, and a call with no client is impossible. A bundle test
 * (test/slow/bundles.test.ts) checks each bundle imports exactly these.
 */
export function awsClientsOf(spec: FunctionSpec): AwsClient[] {
  const clients: AwsClient[] = [];
  if (spec.table.length > 0) clients.push('@aws-sdk/client-dynamodb');
  if (spec.keys.length > 0 || spec.providerSecrets?.length) clients.push('@aws-sdk/client-secrets-manager');
  if (spec.startsDelivery) clients.push('@aws-sdk/client-sfn');
  if (spec.sendsTo?.length) clients.push('@aws-sdk/client-sqs');
  for (const provider of spec.sendsWith ?? []) clients.push(AWS_SENDING_CLIENT[provider]);
  return clients.sort();
}

/**
 * Parts of the AWS SDK a function never loads on Lambda, left out of every bundle: the credential providers after
 * the environment's in the SDK's default chain (Lambda puts the role's credentials in the environment, which the
 * chain tries first, and the stack sets no `AWS_PROFILE`), and the event-stream serde (no operation the functions
 * call streams). The SDK reaches each through `import()`. Bundled, each such target made esbuild wrap every module
 * it shares with the rest (most of `@smithy/core`) in a lazy initializer, compiled apart at its first call, and
 * brought the SSO, STS, sign-in and OIDC clients into each bundle (what that cost:
 * docs/adr/0004-bundled-aws-sdk.md). Left out, the `import()` stays and would fail if reached rather than run
 * another copy of the SDK; test/slow/bundles.test.ts checks that no bundle holds a dynamically imported module,
 * and that a bundled client gets its credentials from the environment with these absent. A runtime that hands credentials over its container endpoint instead of the environment (as
 * SnapStart does for the runtimes it serves) needs `@aws-sdk/credential-provider-http` back in the bundle.
 */
export const SDK_PARTS_NEVER_LOADED_ON_LAMBDA: readonly string[] = [
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-web-identity',
  '@aws-sdk/credential-provider-http',
  '@smithy/credential-provider-imds',
  '@smithy/core/event-streams',
  // The browser user agent's parser (the Node.js builds never call it).
  'bowser',
];

/**
 * How every function is bundled (CDK's NodejsFunction `bundling`, and the esbuild options the bench and the
 * bundle test use to build the same bundles).
 */
export const BUNDLING = {
  minify: true,
  sourceMap: true,
  // Maps without the sources inlined: names and lines resolve, the bundle stays small.
  sourcesContent: false,
  target: 'node22',
  // Prefer ESM entry points so esbuild can tree-shake the AWS SDK, zod and middy.
  mainFields: ['module', 'main'],
  // Bundle the AWS SDK, tree-shaken and minified, rather than load the one the runtime ships: one file to read
  // and compile, where the runtime's SDK is dozens of packages Node resolves one by one. `npm run bench` measures
  // both choices for every function (docs/bench.md, "Bundles and cold start"); the decision and its figures:
  // docs/adr/0004-bundled-aws-sdk.md.
  // The SDK is also the version the tests ran, not whatever the runtime holds.
  bundleAwsSDK: true,
  // CDK takes this list over what `bundleAwsSDK` implies: to use the runtime's SDK, set RUNTIME_AWS_SDK_EXTERNAL
  // here as well.
  externalModules: SDK_PARTS_NEVER_LOADED_ON_LAMBDA,
} as const;

/**
 * What esbuild leaves out to use the runtime's AWS SDK instead (CDK's default without `bundleAwsSDK`): how the
 * bench builds its baseline, a bare function, and the functions' other variant, to measure both choices.
 */
export const RUNTIME_AWS_SDK_EXTERNAL: readonly string[] = ['@aws-sdk/*'];

/** The esbuild options CDK derives from BUNDLING (format cjs, the AWS SDK bundled but for the parts above). */
export const ESBUILD_OPTIONS = {
  bundle: true,
  platform: 'node',
  target: BUNDLING.target,
  format: 'cjs',
  minify: BUNDLING.minify,
  sourcemap: BUNDLING.sourceMap,
  sourcesContent: BUNDLING.sourcesContent,
  mainFields: [...BUNDLING.mainFields],
  // bundleAwsSDK: true with externalModules: CDK leaves out exactly those.
  external: [...BUNDLING.externalModules],
  logLevel: 'error',
} as const;
