/**
 * The CDK stack, checked offline: the synthesized template (routes, IAM, table, state machine, secrets, logs,
 * alarms) and cdk-nag's AwsSolutions rules. The stack is synthesized with real esbuild bundling ONCE for the
 * whole file (nine functions); the context-variation tests skip bundling. The webhook resources have their
 * own tests in webhooks.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, CfnElement, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { TABLE_SCHEMA } from '../../functions/adapters/dynamodb/keys';
import { KEY_GROUPS, type KeyGroup } from '../../functions/adapters/keyring';
import { API_ROUTES_ENV, routesFromEnv } from '../../functions/http/routes';
import { readConfig } from '../../lib/config';
import { FUNCTIONS, FUNCTION_NAMES, ROUTES, type FunctionName } from '../../lib/functions';
import { OtpStack } from '../../lib/otp-stack';
import { CDK_CONTEXT, synthUnbundled } from '../support/cdk';
import { METRIC, METRICS_NAMESPACE, SERVICE_DIMENSION } from '../../functions/core/metrics';

const ROOT = path.join(__dirname, '..', '..');
/** Synthesize with the same feature flags as `cdk synth`. */

// The functions, their entries and routes come from the manifest (lib/functions.ts); what each may do (keys,
// table actions, time-outs) is pinned here by hand, so a change to a function's permissions shows in this file.
/** Their IAM, event sources and queues are checked in webhooks.test.ts. */
const WEBHOOK_FUNCTIONS: FunctionName[] = ['webhookEvents', 'webhookSender'];
const NON_WEBHOOK = FUNCTION_NAMES.filter((name) => !WEBHOOK_FUNCTIONS.includes(name));
/**
 * The key secrets each function may read, by the purposes its handler uses: send hashes and seals codes, check
 * hashes, the delivery tasks open codes and talk to the carrier, receipts are checked with the carrier's key,
 * the webhook sender opens sealed webhook secrets. test/integration/least-privilege.test.ts runs each function's
 * code with exactly what the template grants it.
 */
const KEYS_OF: Record<FunctionName, KeyGroup[]> = {
  // The API functions check API key tags; the console issues keys.
  send: ['codeHash', 'codeSeal', 'apiKeyTag'],
  check: ['codeHash', 'apiKeyTag'],
  fetch: ['apiKeyTag'],
  receipt: ['carrier'],
  deliver: ['codeSeal', 'carrier'],
  afterWait: [],
  sweeper: [],
  webhookEvents: [],
  guardSignals: [],
  webhookSender: ['webhook'],
  // The console seals the signing secret of a webhook endpoint added or rotated there.
  console: ['webhook', 'apiKeyTag'],
};
const KEY_SECRET_LOGICAL_IDS: Record<KeyGroup, string> = {
  codeHash: 'CodeHashKey796E4AF4',
  codeSeal: 'CodeSealKey03B79D09',
  carrier: 'CarrierKey719C9F8F',
  webhook: 'WebhookKeyFF363931',
  apiKeyTag: 'ApiKeyTagKeyB98EE086',
};
/** The functions that start the delivery workflow: send, and the sweeper that restarts stalled deliveries. */
const STARTS_DELIVERY: FunctionName[] = ['send', 'sweeper'];
const TIMEOUTS: Record<FunctionName, number> = {
  // Four SDK calls at their worst (3 tries of 0.3 + 1 s, 1 + 2 s of backoff): 27.6 s, under API Gateway's 30 s.
  send: 28,
  check: 10,
  fetch: 10,
  receipt: 10,
  deliver: 30,
  afterWait: 30,
  sweeper: 50,
  webhookEvents: 30,
  guardSignals: 60,
  webhookSender: 30,
  console: 10,
};
const SETTING_DEFAULTS = {
  OTP_CODE_TTL_SECONDS: '300',
  OTP_MAX_CHECK_ATTEMPTS: '5',
  OTP_BURST_LIMIT: '3',
  OTP_BURST_WINDOW_SECONDS: '300',
  OTP_HOURLY_LIMIT: '10',
  OTP_HOURLY_WINDOW_SECONDS: '3600',
  OTP_KEY_REQUESTS_PER_MINUTE: '120',
  OTP_CONSOLE_REQUESTS_PER_MINUTE: '120',
  OTP_CHANNEL_WAIT_SECONDS: '8',
  OTP_UNREACHABLE_DAYS: '30',
};

function synth(context: Record<string, unknown> = {}, bundle = true) {
  const app = new App({
    // Without bundling, assets are stubbed: fast enough for tests that only look at configuration.
    context: { ...CDK_CONTEXT, ...context, ...(bundle ? {} : { 'aws:cdk:bundling-stacks': [] }) },
  });
  const stack = new OtpStack(app, 'OtpVerify');
  return { app, stack, template: Template.fromStack(stack) };
}

/** The assemblies (with the bundles) go to temporary directories; do not leave them behind. */
function removeAssembly(synthesized: App): void {
  if (synthesized.outdir.startsWith(tmpdir())) rmSync(synthesized.outdir, { recursive: true, force: true });
}

let app: App;
let stack: OtpStack;
let template: Template;
let resources: Record<string, { Type: string; Properties: Record<string, unknown>; [key: string]: unknown }>;

beforeAll(() => {
  ({ app, stack, template } = synth());
  resources = template.toJSON().Resources;
}, 120_000);
afterAll(() => removeAssembly(app));

const logicalId = (construct: IConstruct): string => {
  const element = construct instanceof CfnElement ? construct : construct.node.defaultChild;
  if (!(element instanceof CfnElement)) throw new Error(`${construct.node.path} has no CFN resource`);
  return stack.resolve(element.logicalId) as string;
};
const fnId = (name: FunctionName) => logicalId(stack.functions[name]);
const getAtt = (id: string, attribute = 'Arn') => ({ 'Fn::GetAtt': [id, attribute] });
const guardDroppedBatchesId = () => logicalId(stack.guardDroppedBatches);
const ref = (id: string) => ({ Ref: id });

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}
interface Granted {
  actions: string[];
  resource: unknown;
  /** The statement's condition, when it has one (the table's LeadingKeys). */
  condition?: unknown;
}
/** Every statement of the inline policies attached to a role, actions sorted, one resource per entry. */
function statementsOf(roleId: string): Granted[] {
  const out: Granted[] = [];
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = resource.Properties.Roles as unknown[];
    if (!roles.some((role) => JSON.stringify(role) === JSON.stringify(ref(roleId)))) continue;
    const document = resource.Properties.PolicyDocument as { Statement: Statement[] };
    for (const statement of document.Statement) {
      expect(statement.Effect).toBe('Allow');
      const actions = [statement.Action].flat().sort();
      // LeadingKeys lists compared as sets.
      const condition = statement.Condition && JSON.parse(JSON.stringify(statement.Condition), sortLists);
      for (const target of [statement.Resource].flat()) {
        out.push({ actions, resource: target, ...(condition ? { condition } : {}) });
      }
    }
  }
  return out;
}
const sortLists = (_key: string, value: unknown): unknown =>
  Array.isArray(value) && value.every((item) => typeof item === 'string') ? [...value].sort() : value;
const sortStatements = (statements: Granted[]) =>
  [...statements].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describe('functions', () => {
  test("the manifest's Node.js 22 arm64 functions, 256 MB, untraced by default, each with its own log group", () => {
    template.resourceCountIs('AWS::Lambda::Function', FUNCTION_NAMES.length);
    for (const name of FUNCTION_NAMES) {
      const logGroupId = logicalId(stack.logGroups[name]);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        MemorySize: 256,
        Timeout: TIMEOUTS[name],
        // X-Ray only with otp:tracing (below): Lambda's sampling would cost more than the rest of the bill.
        TracingConfig: Match.absent(),
        Handler: 'index.handler',
        LoggingConfig: { LogGroup: ref(logGroupId) },
        Role: getAtt(logicalId(stack.functions[name].role!)),
      });
      expect(resources[fnId(name)]!.Properties.LoggingConfig).toEqual({ LogGroup: ref(logGroupId) });
      expect(resources[logGroupId]!.Properties.RetentionInDays).toBe(30);
    }
  });

  test('each function is bundled from its own entry file, minified, with a source map and the AWS SDK inside', () => {
    for (const name of FUNCTION_NAMES) {
      const code = resources[fnId(name)]!.Properties.Code as { S3Key: string };
      const assetDir = path.join(app.outdir, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
      const map = JSON.parse(readFileSync(path.join(assetDir, 'index.js.map'), 'utf8')) as {
        sources: string[];
      };
      const entry = FUNCTIONS[name].entry;
      expect(map.sources.some((source) => source.endsWith(entry))).toBe(true);
      // ... and no other function's entry: one bundle per handler.
      for (const other of FUNCTION_NAMES.filter((n) => n !== name)) {
        expect(map.sources.some((source) => source.endsWith(FUNCTIONS[other].entry))).toBe(false);
      }
      const bundle = readFileSync(path.join(assetDir, 'index.js'), 'utf8');
      expect(bundle).toMatch(/sourceMappingURL=index\.js\.map/);
      // Minified: far fewer lines than characters.
      expect(bundle.split('\n').length).toBeLessThan(bundle.length / 1000);
      // The AWS SDK bundled (BUNDLING.bundleAwsSDK), not required from the runtime's, @smithy included (a part left
      // out but imported statically would load the runtime's copy). (The SDK's own error messages quote
      // `[require("@aws-sdk/signature-v4-crt")]`: not a call.)
      expect(map.sources.some((source) => source.includes('node_modules/@aws-sdk/client-dynamodb/'))).toBe(
        true,
      );
      expect(bundle).not.toMatch(/(?<!\[)require\(["'](@aws-sdk|@smithy)\//);
      // ... but for the parts Lambda never loads (BUNDLING.externalModules): not inside, imported only if reached.
      expect(
        map.sources.filter((source) => /credential-provider-(sso|ini)|nested-clients/.test(source)),
      ).toEqual([]);
      expect(bundle).toContain('import("@aws-sdk/credential-provider-ini")');
    }
  });

  test("the console function's bundle carries the console's page, script and style sheet", () => {
    const code = resources[fnId('console')]!.Properties.Code as { S3Key: string };
    const assetDir = path.join(app.outdir, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
    const html = readFileSync(path.join(assetDir, 'console', 'index.html'), 'utf8');
    expect(html).toContain('/console/app.js');
    const script = readFileSync(path.join(assetDir, 'console', 'app.js'), 'utf8');
    expect(script).toContain('/console/api');
    expect(script.length).toBeLessThan(60_000);
    expect(readFileSync(path.join(assetDir, 'console', 'app.css'), 'utf8')).toContain('.timeline');
  });

  test('environment: table, its own key secrets only, settings with spec defaults, channels, no NODE_OPTIONS', () => {
    const stateMachineId = logicalId(stack.stateMachine);
    for (const name of FUNCTION_NAMES) {
      const variables = (
        resources[fnId(name)]!.Properties.Environment as { Variables: Record<string, unknown> }
      ).Variables;
      const expected: Record<string, unknown> = {
        TABLE_NAME: ref(logicalId(stack.table)),
        ...Object.fromEntries(
          KEYS_OF[name].map((group) => [KEY_GROUPS[group].env, ref(KEY_SECRET_LOGICAL_IDS[group])]),
        ),
        OTP_ALLOWED_CHANNELS: 'sms,whatsapp,viber,rcs,sna',
        ...SETTING_DEFAULTS,
        // The metrics' `service` dimension and the log lines' service name: the stack's name.
        POWERTOOLS_SERVICE_NAME: stack.stackName,
      };
      if (STARTS_DELIVERY.includes(name)) expected.STATE_MACHINE_ARN = ref(stateMachineId);
      if (WEBHOOK_FUNCTIONS.includes(name)) expected.WEBHOOK_QUEUE_URL = ref(logicalId(stack.webhookQueue));
      if (name === 'webhookSender') {
        expected.WEBHOOK_DEAD_LETTER_QUEUE_URL = ref(logicalId(stack.webhookDeadLetterQueue));
      }
      // The route table of the API's `$default` answers (404 or 405), checked against ROUTES in 'HTTP API'.
      if (name === 'fetch') expected[API_ROUTES_ENV] = expect.any(String);
      if (name === 'console') {
        // What the page is told about signing in: the hosted sign-in domain and the app client.
        expected.CONSOLE_AUTH_URL = expect.anything();
        expected.CONSOLE_CLIENT_ID = ref(logicalId(stack.console.client));
      }
      // Exactly these: no carrier URL unless configured, nothing else.
      expect(variables).toEqual(expected);
    }
  });
});

describe('HTTP API', () => {
  const routes: [string, FunctionName][] = ROUTES.map(({ method, path, name }) => [
    `${method} ${path}`,
    name,
  ]);

  test('exactly the routes of the manifest: the four of the API, the three of the console', () => {
    expect(routes).toEqual([
      ['POST /v2/Services/{ServiceSid}/Verifications', 'send'],
      ['POST /v2/Services/{ServiceSid}/VerificationCheck', 'check'],
      ['GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}', 'fetch'],
      ['POST /v2/Callbacks/{Provider}', 'receipt'],
      ['GET /console', 'console'],
      ['GET /console/{asset}', 'console'],
      ['ANY /console/api/{proxy+}', 'console'],
    ]);
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    const keys = Object.values(resources)
      .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
      .map((r) => r.Properties.RouteKey);
    // And `$default`, for the requests none of them takes (below).
    expect(keys.sort()).toEqual([...routes.map(([key]) => key), '$default'].sort());
  });

  test('$default (no route matched) goes to the fetch function, which is given the route table for 404 or 405', () => {
    const [unmatched] = Object.values(
      template.findResources('AWS::ApiGatewayV2::Route', { Properties: { RouteKey: '$default' } }),
    );
    const [fetchRoute] = Object.values(
      template.findResources('AWS::ApiGatewayV2::Route', {
        Properties: { RouteKey: 'GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}' },
      }),
    );
    expect(unmatched!.Properties.Target).toEqual(fetchRoute!.Properties.Target);
    expect(unmatched!.Properties.AuthorizationType).toBe('NONE');
    const fetchEnv = (
      resources[fnId('fetch')]!.Properties.Environment as { Variables: Record<string, string> }
    ).Variables;
    expect(routesFromEnv(fetchEnv[API_ROUTES_ENV])).toEqual(
      ROUTES.map(({ method, path }) => ({ method, path })),
    );
  });

  test.each(routes)('%s goes to the %s function (Lambda proxy, payload 2.0)', (routeKey, name) => {
    const [route] = Object.values(
      template.findResources('AWS::ApiGatewayV2::Route', { Properties: { RouteKey: routeKey } }),
    );
    const target = route!.Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] };
    expect(target['Fn::Join'][1][0]).toBe('integrations/');
    const integration = resources[target['Fn::Join'][1][1].Ref]!;
    expect(integration.Type).toBe('AWS::ApiGatewayV2::Integration');
    expect(integration.Properties).toMatchObject({
      IntegrationType: 'AWS_PROXY',
      PayloadFormatVersion: '2.0',
      IntegrationUri: getAtt(fnId(name)),
    });
    // API Gateway may invoke the function, for this route only.
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'apigateway.amazonaws.com',
      FunctionName: getAtt(fnId(name)),
      SourceArn: { 'Fn::Join': ['', Match.arrayWith([`/*/*${routeKey.split(' ')[1]}`])] },
    });
  });

  test('default stage: auto-deployed, throttled, access logs to a log group with retention', () => {
    template.resourceCountIs('AWS::ApiGatewayV2::Stage', 1);
    const [stage] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stage!.Properties).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 },
    });
    const logs = stage!.Properties.AccessLogSettings as {
      DestinationArn: { 'Fn::GetAtt': [string] };
      Format: string;
    };
    const logGroup = resources[logs.DestinationArn['Fn::GetAtt'][0]]!;
    expect(logGroup.Type).toBe('AWS::Logs::LogGroup');
    expect(logGroup.Properties.RetentionInDays).toBe(30);
    const format = JSON.parse(logs.Format) as Record<string, string>;
    expect(format.requestId).toBe('$context.requestId');
    // Nothing that can hold an API key or a code.
    expect(logs.Format).not.toMatch(/header|requestBody|querystring/i);
  });

  test('receipts have their own route-level limit, and no function has reserved concurrency by default', () => {
    const [stage] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'));
    // Keyed by the receipt route's own key: a route key that matches no route would limit nothing.
    const receiptRoute = routes.find(([, name]) => name === 'receipt')![0];
    // Every route has its own (test/cdk/throttles-edge.test.ts); the receipts' is sized for their own rate.
    expect(stage!.Properties.RouteSettings).toMatchObject({
      [receiptRoute]: { ThrottlingRateLimit: 3000, ThrottlingBurstLimit: 5000 },
    });
    const routeKeys = Object.values(template.findResources('AWS::ApiGatewayV2::Route')).map(
      (route) => route.Properties.RouteKey,
    );
    expect(routeKeys).toContain(receiptRoute);
    // A reservation fails the deploy on an account under 100 + N concurrency (new accounts have 10).
    for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
      expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    }
  });

  test('no authorizer on the API: its handlers authenticate (X-API-Key, receipt signatures); JWT on the console API', () => {
    for (const route of Object.values(template.findResources('AWS::ApiGatewayV2::Route'))) {
      const key = route.Properties.RouteKey as string;
      expect([key, route.Properties.AuthorizationType]).toEqual([
        key,
        key.startsWith('ANY /console/api/') ? 'JWT' : 'NONE',
      ]);
    }
  });
});

describe('IAM least privilege', () => {
  /** The table actions of each function, each on the partition-key families (LeadingKeys) it uses them on. */
  const expectedTable: Record<FunctionName, { actions: string[]; leadingKeys: string[] }[]> = {
    send: [
      {
        actions: ['dynamodb:BatchGetItem'],
        leadingKeys: ['SERVICE#*', 'NUMBER#*', 'IDEMPOTENCY#*', 'GUARD#*'],
      },
      {
        actions: [
          'dynamodb:ConditionCheckItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
        ],
        leadingKeys: ['SERVICE#*', 'NUMBER#*', 'IDEMPOTENCY#*', 'VERIFICATION#*', 'APIKEY#*'],
      },
    ],
    check: [
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['VERIFICATION#*', 'APIKEY#*'] },
    ],
    fetch: [
      { actions: ['dynamodb:GetItem'], leadingKeys: ['VERIFICATION#*', 'APIKEY#*'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['APIKEY#*'] },
    ],
    receipt: [{ actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['VERIFICATION#*'] }],
    deliver: [
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['VERIFICATION#*', 'NUMBER#*'] },
    ],
    afterWait: [
      { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['VERIFICATION#*', 'NUMBER#*'] },
    ],
    // The ledger (the directory of services, each service's charge lines), its cursor, the sends' verifications
    // in batches; settling an overdue delivery: its verification, and the number when every channel rejected it.
    sweeper: [
      { actions: ['dynamodb:Query'], leadingKeys: ['DIRECTORY#*', 'SERVICE#*'] },
      {
        actions: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem'],
        leadingKeys: ['VERIFICATION#*', 'NUMBER#*'],
      },
      { actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], leadingKeys: ['SWEEP#*'] },
    ],
    webhookEvents: [{ actions: ['dynamodb:Query'], leadingKeys: ['SERVICE#*'] }],
    // The guard's aggregates and state, read and written by its stream consumer only; the service items read
    // for the owners' caps; the directory's services counted (the global scope is kept from 4).
    guardSignals: [
      { actions: ['dynamodb:BatchGetItem'], leadingKeys: ['GUARD#*', 'SERVICE#*'] },
      { actions: ['dynamodb:PutItem'], leadingKeys: ['GUARD#*'] },
      { actions: ['dynamodb:Query'], leadingKeys: ['DIRECTORY#*'] },
    ],
    // PutItem: one delivery record per attempt, in its own family (no write on any service item), for the console.
    webhookSender: [
      { actions: ['dynamodb:GetItem'], leadingKeys: ['SERVICE#*'] },
      { actions: ['dynamodb:PutItem'], leadingKeys: ['WEBHOOKDELIVERY#*'] },
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['VERIFICATION#*'] },
    ],
    // The admin stores' writes for the console's pages; memberships and verifications read only.
    console: [
      {
        actions: [
          'dynamodb:BatchGetItem',
          'dynamodb:ConditionCheckItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ],
        leadingKeys: ['SERVICE#*', 'DIRECTORY#*', 'APIKEY#*'],
      },
      // A template removed.
      { actions: ['dynamodb:DeleteItem'], leadingKeys: ['SERVICE#*'] },
      { actions: ['dynamodb:GetItem', 'dynamodb:Query'], leadingKeys: ['MEMBER#*'] },
      { actions: ['dynamodb:Query'], leadingKeys: ['WEBHOOKDELIVERY#*'] },
      // The guard page: the service's guard state and the global one's, and a block lifted by hand.
      {
        actions: ['dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
        leadingKeys: ['GUARD#*'],
      },
      { actions: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'], leadingKeys: ['VERIFICATION#*'] },
      // The per-user request limit's count: written, never read or deleted.
      { actions: ['dynamodb:UpdateItem'], leadingKeys: ['CONSOLEUSER#*'] },
    ],
  };

  test.each(NON_WEBHOOK)(
    '%s: exactly its table actions and families, its key secrets, its log group',
    (name) => {
      const roleId = logicalId(stack.functions[name].role!);
      const expected: Granted[] = [
        {
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resource: getAtt(logicalId(stack.logGroups[name])),
        },
        ...KEYS_OF[name].map((group) => ({
          actions: ['secretsmanager:GetSecretValue'],
          resource: ref(KEY_SECRET_LOGICAL_IDS[group]),
        })),
        ...expectedTable[name].map((grant) => ({
          actions: grant.actions,
          resource: getAtt(logicalId(stack.table)),
          condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...grant.leadingKeys].sort() } },
        })),
      ];
      if (STARTS_DELIVERY.includes(name)) {
        expected.push({ actions: ['states:StartExecution'], resource: ref(logicalId(stack.stateMachine)) });
      }
      if (KEYS_OF[name].length > 1) {
        // Its two key secrets in one request (functions/wiring/keys.ts): the batch action has no resource-level
        // permission; GetSecretValue on each secret still decides.
        expected.push({ actions: ['secretsmanager:BatchGetSecretValue'], resource: '*' });
      }
      if (name === 'guardSignals') {
        // The table's stream, read by its event source (ListStreams has no resource-level permission).
        expected.push({ actions: ['dynamodb:ListStreams'], resource: '*' });
        expected.push({
          actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
          resource: getAtt(logicalId(stack.table), 'StreamArn'),
        });
        // The event source reports a batch it dropped to the guard's on-failure queue, in the consumer's name.
        expected.push({
          actions: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
          resource: getAtt(guardDroppedBatchesId()),
        });
      }
      expect(sortStatements(statementsOf(roleId))).toEqual(sortStatements(expected));
      // No managed policies (AWSLambdaBasicExecutionRole would allow logs:CreateLogGroup on *).
      expect(resources[roleId]!.Properties.ManagedPolicyArns).toBeUndefined();
      expect(resources[roleId]!.Properties.Policies).toBeUndefined();
    },
  );

  test('state machine role: invokes the two task functions only', () => {
    const roleId = logicalId(stack.stateMachine.role);
    const statements = statementsOf(roleId);
    const invoke = statements.filter((s) => s.actions.some((a) => a.startsWith('lambda:')));
    expect(invoke.map((s) => s.actions)).toEqual([['lambda:InvokeFunction'], ['lambda:InvokeFunction']]);
    expect(invoke.map((s) => s.resource)).toEqual(
      expect.arrayContaining([getAtt(fnId('deliver')), getAtt(fnId('afterWait'))]),
    );
    // "*" only where the service supports nothing narrower: log delivery and X-Ray.
    for (const statement of statements.filter((s) => s.resource === '*')) {
      for (const action of statement.actions) expect(action).toMatch(/^(logs:[A-Za-z]+|xray:[A-Za-z]+)$/);
    }
    expect(resources[roleId]!.Properties.ManagedPolicyArns).toBeUndefined();
  });

  test('no wildcard action anywhere; "*" resources only for X-Ray, Step Functions log delivery, ListStreams and the key secrets\' batch read', () => {
    for (const resource of Object.values(resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      for (const statement of (resource.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
        const actions = [statement.Action].flat();
        for (const action of actions) expect(action).not.toMatch(/\*/);
        if ([statement.Resource].flat().includes('*')) {
          // dynamodb:ListStreams: the webhook events function's stream event source (no resource-level permission);
          // secretsmanager:BatchGetSecretValue: the key secrets' batch read (GetSecretValue per secret still applies).
          for (const action of actions)
            expect(action).toMatch(
              /^(xray:|logs:|dynamodb:ListStreams$|secretsmanager:BatchGetSecretValue$)/,
            );
          expect(actions.some((a) => a.startsWith('logs:Put') && a !== 'logs:PutResourcePolicy')).toBe(false);
        }
      }
    }
  });

  test('every grant on the table is limited to partition-key families, and none can do without a key', () => {
    const table = JSON.stringify(getAtt(logicalId(stack.table)));
    let grants = 0;
    for (const resource of Object.values(resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      for (const statement of (resource.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
        if (![statement.Resource].flat().some((target) => JSON.stringify(target) === table)) continue;
        grants += 1;
        const prefixes = (
          statement.Condition as
            { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': string[] } } | undefined
        )?.['ForAllValues:StringLike']['dynamodb:LeadingKeys'];
        // The state machine's status read also names the attributes it may read (delivery-workflow.test.ts).
        expect(Object.keys(statement.Condition ?? {})).toContain('ForAllValues:StringLike');
        for (const key of Object.keys(statement.Condition ?? {}))
          expect(['ForAllValues:StringLike', 'ForAllValues:StringEquals', 'StringEqualsIfExists']).toContain(
            key,
          );
        expect(prefixes!.length).toBeGreaterThan(0);
        for (const prefix of prefixes!)
          expect(prefix).toMatch(
            /^(SERVICE|APIKEY|VERIFICATION|IDEMPOTENCY|NUMBER|MEMBER|DIRECTORY|GUARD|WEBHOOKDELIVERY|SWEEP|CONSOLEUSER)#\*$/,
          );
        // ForAllValues holds for a request that names no partition key at all: Scan and PartiQL would pass
        // the condition, so no role may have them.
        for (const action of [statement.Action].flat()) {
          expect(action).not.toMatch(
            /^dynamodb:(Scan|ExecuteStatement|BatchExecuteStatement|ExecuteTransaction|PartiQL)/,
          );
        }
      }
    }
    expect(grants).toBeGreaterThan(0);
  });

  test('each key secret is readable by exactly the functions of its purposes, and nothing else', () => {
    const readers = new Map<string, string[]>();
    const roleOwner = new Map(FUNCTION_NAMES.map((name) => [logicalId(stack.functions[name].role!), name]));
    for (const resource of Object.values(resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      const roles = (resource.Properties.Roles as { Ref: string }[]).map(
        (role) => roleOwner.get(role.Ref) ?? role.Ref,
      );
      for (const statement of (resource.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
        const actions = [statement.Action].flat();
        if (!actions.some((action) => action.startsWith('secretsmanager:'))) continue;
        // The batch read's statement names no secret ("*"): it reads nothing without GetSecretValue below.
        if (actions.includes('secretsmanager:BatchGetSecretValue')) {
          expect(statement.Resource).toBe('*');
          expect(actions.filter((action) => action.startsWith('secretsmanager:'))).toEqual([
            'secretsmanager:BatchGetSecretValue',
          ]);
          continue;
        }
        expect(actions).toEqual(['secretsmanager:GetSecretValue']);
        for (const target of [statement.Resource].flat() as { Ref: string }[]) {
          readers.set(target.Ref, [...(readers.get(target.Ref) ?? []), ...roles].sort());
        }
      }
    }
    const expected = new Map<string, string[]>();
    for (const name of FUNCTION_NAMES) {
      for (const group of KEYS_OF[name]) {
        const id = KEY_SECRET_LOGICAL_IDS[group];
        expected.set(id, [...(expected.get(id) ?? []), name].sort());
      }
    }
    expect(readers).toEqual(expected);
    // Every key secret is read by someone (none is dead weight), and webhookEvents, fetch, the sweeper by none.
    expect([...readers.keys()].sort()).toEqual(Object.values(KEY_SECRET_LOGICAL_IDS).sort());
  });
});

describe('DynamoDB table', () => {
  test('keys from TABLE_SCHEMA, TTL, on-demand, PITR, deletion protection, retained', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        KeySchema: [
          { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
          { AttributeName: TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
        ],
        AttributeDefinitions: Match.arrayEquals([
          { AttributeName: TABLE_SCHEMA.partitionKey, AttributeType: 'S' },
          { AttributeName: TABLE_SCHEMA.sortKey, AttributeType: 'S' },
        ]),
        TimeToLiveSpecification: { AttributeName: TABLE_SCHEMA.ttlAttribute, Enabled: true },
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
        ProvisionedThroughput: Match.absent(),
      },
    });
  });

  test('no secondary index: the sweeper walks the ledger, so no write pays for an index entry', () => {
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table'));
    expect(table!.Properties.GlobalSecondaryIndexes).toBeUndefined();
    expect(table!.Properties.LocalSecondaryIndexes).toBeUndefined();
  });
});

describe('X-Ray, with otp:tracing', () => {
  test('every function and the state machine traced, and each role may write its segments', () => {
    const traced = synthUnbundled({ 'otp:tracing': 'true' });
    try {
      const functions = Object.values(traced.resources).filter((r) => r.Type === 'AWS::Lambda::Function');
      expect(functions).toHaveLength(FUNCTION_NAMES.length);
      for (const fn of functions) expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
      traced.template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
        TracingConfiguration: { Enabled: true },
      });
      for (const name of FUNCTION_NAMES) {
        const roleId = traced.stack.getLogicalId(
          traced.stack.functions[name].role!.node.defaultChild as CfnElement,
        );
        const actions = Object.values(traced.resources)
          .filter((r) => r.Type === 'AWS::IAM::Policy')
          .filter((r) => JSON.stringify(r.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
          .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
          .flatMap((statement) => [statement.Action].flat());
        expect(actions).toEqual(
          expect.arrayContaining(['xray:PutTraceSegments', 'xray:PutTelemetryRecords']),
        );
      }
    } finally {
      traced.cleanup();
    }
  }, 60_000);

  test('off by default: no function, role or the state machine mentions X-Ray', () => {
    expect(JSON.stringify(template.toJSON())).not.toMatch(/xray:|"Mode":"Active"/);
  });
});

describe('sweeper schedule', () => {
  test('an EventBridge rule runs the sweeper every minute, and only it', () => {
    template.resourceCountIs('AWS::Events::Rule', 1);
    const [ruleId, rule] = Object.entries(template.findResources('AWS::Events::Rule'))[0]!;
    expect(rule.Properties).toMatchObject({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' });
    const targets = rule.Properties.Targets as { Arn: unknown }[];
    expect(targets).toHaveLength(1);
    expect(targets[0]).toMatchObject({
      Arn: getAtt(fnId('sweeper')),
      RetryPolicy: { MaximumEventAgeInSeconds: 60 },
    });
    // EventBridge may invoke the sweeper, from this rule only.
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: getAtt(fnId('sweeper')),
      SourceArn: getAtt(ruleId),
    });
  });

  test('a failed run is not retried by Lambda: the next scheduled run does the same work', () => {
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: ref(fnId('sweeper')),
      MaximumRetryAttempts: 0,
    });
  });

  test('a run Lambda could not start within the minute (throttled) is dropped, not run hours later', () => {
    // Lambda keeps a throttled asynchronous event and tries it again for up to MaximumEventAgeInSeconds (6 hours by
    // default), whatever MaximumRetryAttempts says: each minute of a throttling episode would queue one more run.
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: ref(fnId('sweeper')),
      MaximumEventAgeInSeconds: 60,
    });
  });
});

describe('state machine', () => {
  const aslPath = path.join(ROOT, 'statemachine/delivery.asl.json');

  test('Express, logged without execution data, untraced by default', () => {
    template.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineType: 'EXPRESS',
      TracingConfiguration: { Enabled: false },
      LoggingConfiguration: {
        Level: 'ERROR',
        IncludeExecutionData: false,
        Destinations: [
          { CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [Match.anyValue(), 'Arn'] } } },
        ],
      },
    });
    const [machine] = Object.values(template.findResources('AWS::StepFunctions::StateMachine'));
    const destination = (
      machine!.Properties.LoggingConfiguration as {
        Destinations: { CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [string] } } }[];
      }
    ).Destinations[0]!.CloudWatchLogsLogGroup.LogGroupArn['Fn::GetAtt'][0];
    expect(resources[destination]!.Properties.RetentionInDays).toBe(30);
  });

  test('the definition is the ASL file, every placeholder substituted with the real task function ARN', () => {
    const [machine] = Object.values(template.findResources('AWS::StepFunctions::StateMachine'));
    const { DefinitionSubstitutions: substitutions, DefinitionS3Location: location } = machine!
      .Properties as {
      DefinitionSubstitutions: Record<string, unknown>;
      DefinitionS3Location: { Key: string };
    };
    expect(substitutions).toEqual({
      DeliverFunctionArn: getAtt(fnId('deliver')),
      AfterWaitFunctionArn: getAtt(fnId('afterWait')),
      // The status read's table and key template (test/cdk/delivery-workflow.test.ts).
      TableName: ref(logicalId(stack.table)),
      VerificationPartitionKeyFormat: 'VERIFICATION#{}',
      VerificationSortKey: 'VERIFICATION',
    });

    // The asset uploaded is the file itself, unchanged.
    const staged = readFileSync(path.join(app.outdir, `asset.${location.Key}`), 'utf8');
    expect(staged).toBe(readFileSync(aslPath, 'utf8'));

    // Apply the substitutions as CloudFormation will: nothing of the form ${...} may remain.
    let definition = staged;
    for (const [name, value] of Object.entries(substitutions)) {
      definition = definition.split(`\${${name}}`).join(JSON.stringify(value).replace(/"/g, "'"));
    }
    expect(definition).not.toContain('${');
    const states = Object.values(
      (JSON.parse(definition) as { States: Record<string, { Type: string; Resource?: string }> }).States,
    );
    const taskResources = states.filter((s) => s.Type === 'Task').map((s) => s.Resource);
    // The settling step reuses the AfterWait function: no third task function. The status read is Step
    // Functions' own DynamoDB GetItem, no Lambda.
    expect(taskResources.sort()).toEqual(
      [
        'arn:aws:states:::dynamodb:getItem',
        JSON.stringify(getAtt(fnId('afterWait'))),
        JSON.stringify(getAtt(fnId('afterWait'))),
        JSON.stringify(getAtt(fnId('deliver'))),
      ]
        .map((s) => s.replace(/"/g, "'"))
        .sort(),
    );
  });

  test('a task still failing after its retries is caught and the delivery settled, then the execution fails', () => {
    interface State {
      Type: string;
      Resource?: string;
      Parameters?: Record<string, unknown>;
      Retry?: unknown[];
      Catch?: { ErrorEquals: string[]; ResultPath?: string; Next: string }[];
      Next?: string;
      Error?: string;
    }
    const { States: states } = JSON.parse(readFileSync(aslPath, 'utf8')) as { States: Record<string, State> };
    for (const name of ['DeliverOverChannel', 'AfterWait']) {
      expect(states[name]!.Retry).toHaveLength(1);
      // Every error, once the retries are spent; the error beside the input, never in place of it.
      expect(states[name]!.Catch).toEqual([
        { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'SettleAfterError' },
      ]);
    }
    const settle = states.SettleAfterError!;
    expect(settle.Type).toBe('Task');
    expect(settle.Resource).toBe('${AfterWaitFunctionArn}');
    // Its input is rebuilt from the workflow's own fields: the error text never reaches the task.
    expect(settle.Parameters).toEqual({
      'sid.$': '$.sid',
      'channelIndex.$': '$.channelIndex',
      'waitSeconds.$': '$.waitSeconds',
      settle: true,
    });
    expect(settle.Retry).toEqual(states.AfterWait!.Retry);
    expect(settle.Catch).toBeUndefined();
    // Settled, the execution still ends failed: the ExecutionsFailed alarm sees tasks that keep failing.
    expect(states[settle.Next!]).toMatchObject({ Type: 'Fail', Error: 'DeliveryTaskFailed' });
  });

  test.each(STARTS_DELIVERY)('%s may start it (and gets its ARN)', (name) => {
    const variables = (
      resources[fnId(name)]!.Properties.Environment as { Variables: Record<string, unknown> }
    ).Variables;
    expect(variables.STATE_MACHINE_ARN).toEqual(ref(logicalId(stack.stateMachine)));
  });
});

test('stateful and named resources keep their logical ids (the constructs group code, not addresses)', () => {
  // A new logical id replaces the resource: the table would lose its data, the queues their messages, the API
  // its URL; the named state-machine log group and the $default stage would collide with their old selves.
  const pinned: Record<string, [IConstruct, string]> = {
    TableCD117FA1: [stack.table, 'AWS::DynamoDB::Table'],
    WebhookQueueA9D318EA: [stack.webhookQueue, 'AWS::SQS::Queue'],
    WebhookDeadLetterQueue6DD1CE59: [stack.webhookDeadLetterQueue, 'AWS::SQS::Queue'],
    ApiF70053CD: [stack.api, 'AWS::ApiGatewayV2::Api'],
    Delivery5F6C039D: [stack.stateMachine, 'AWS::StepFunctions::StateMachine'],
    SendLogsBECBB0F6: [stack.logGroups.send, 'AWS::Logs::LogGroup'],
  };
  for (const [id, [construct, type]] of Object.entries(pinned)) {
    expect(logicalId(construct)).toBe(id);
    expect(resources[id]!.Type).toBe(type);
  }
  expect(Object.keys(template.findResources('AWS::ApiGatewayV2::Stage'))).toEqual([
    'ApiDefaultStage829AE46A',
  ]);
  expect(resources.DeliveryLogsAB0E43B0!.Properties.LogGroupName).toBe(
    '/aws/vendedlogs/states/OtpVerify-Delivery',
  );
  for (const name of FUNCTION_NAMES) {
    expect(fnId(name)).toMatch(new RegExp(`^${FUNCTIONS[name].id}Function[0-9A-F]{8}$`));
  }
});

describe('secrets', () => {
  test('one generated key secret per purpose group, pinned: logical id and generation options', () => {
    // A changed logical id or GenerateSecretString makes CloudFormation replace the secret, that is, generate a
    // new key: every code in flight fails, the carrier must be reconfigured, sealed webhook secrets stop opening.
    // Change these only with a migration plan (docs/deploy.md, Secrets).
    const secrets = template.findResources('AWS::SecretsManager::Secret');
    expect(Object.keys(secrets).sort()).toEqual(Object.values(KEY_SECRET_LOGICAL_IDS).sort());
    for (const [group, id] of Object.entries(KEY_SECRET_LOGICAL_IDS) as [KeyGroup, string][]) {
      expect(logicalId(stack.keySecrets[group])).toBe(id);
      expect(secrets[id]!.Properties.GenerateSecretString).toEqual({
        SecretStringTemplate: JSON.stringify({ purpose: group }),
        GenerateStringKey: 'key',
        PasswordLength: 64,
        ExcludePunctuation: true,
      });
      // No value in the template, no fixed name (a rename replaces too), the default AWS-managed key.
      expect(Object.keys(secrets[id]!.Properties).sort()).toEqual(['Description', 'GenerateSecretString']);
    }
    template.resourceCountIs('AWS::SSM::Parameter', 0);
  });

  test('the key secrets outlive the stack as the table does (retained on delete and on replacement)', () => {
    for (const id of Object.values(KEY_SECRET_LOGICAL_IDS)) {
      expect(resources[id]).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    }
  });

  test('no environment variable holds anything that looks like a key', () => {
    const keyVariables = new Set<string>(Object.values(KEY_GROUPS).map((group) => group.env));
    for (const name of FUNCTION_NAMES) {
      const variables = (
        resources[fnId(name)]!.Properties.Environment as { Variables: Record<string, unknown> }
      ).Variables;
      for (const [variable, value] of Object.entries(variables)) {
        // Anything secret-sounding may only be a reference (a key secret's ARN), never a literal.
        if (/SECRET|TOKEN|PASSWORD|MASTER/i.test(variable)) expect(typeof value).not.toBe('string');
        if (keyVariables.has(variable)) {
          expect(Object.values(KEY_SECRET_LOGICAL_IDS)).toContain((value as { Ref: string }).Ref);
        }
        if (typeof value !== 'string') continue; // references (Ref/GetAtt) to the table, secrets, state machine
        expect(value).not.toMatch(/[A-Za-z0-9+/_=-]{24,}/);
      }
      expect(variables.OTP_MASTER_KEY).toBeUndefined();
    }
  });

  test('nothing in the template reads a secret value into plain text', () => {
    const text = JSON.stringify(template.toJSON());
    expect(text).not.toMatch(/resolve:secretsmanager|resolve:ssm-secure/);
    expect(text).not.toMatch(/"(masterKey|key)"\s*:\s*"/);
  });
});

describe('alarms', () => {
  const alarm = (props: Record<string, unknown>) =>
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      Statistic: 'Sum',
      ...props,
    });

  test('HTTP API 5xx', () => {
    alarm({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
      Dimensions: [{ Name: 'ApiId', Value: ref(logicalId(stack.api)) }],
    });
  });

  test.each(FUNCTION_NAMES)('%s errors', (name) => {
    alarm({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: ref(fnId(name)) }],
    });
  });

  test('failed workflow executions', () => {
    alarm({
      Namespace: 'AWS/States',
      MetricName: 'ExecutionsFailed',
      Dimensions: [{ Name: 'StateMachineArn', Value: ref(logicalId(stack.stateMachine)) }],
    });
  });

  test('timed-out workflow executions (the Express five-minute limit), as well as failed ones', () => {
    alarm({
      Namespace: 'AWS/States',
      MetricName: 'ExecutionsTimedOut',
      Dimensions: [{ Name: 'StateMachineArn', Value: ref(logicalId(stack.stateMachine)) }],
      Period: 300,
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
    });
  });

  test('FAILED deliveries: the EMF metric the delivery core writes (its name, namespace and service dimension)', () => {
    // No log pattern any more: the metric is written where deliveries end (functions/core/delivery.ts).
    template.resourceCountIs('AWS::Logs::MetricFilter', 0);
    alarm({
      Namespace: METRICS_NAMESPACE,
      MetricName: METRIC.deliveriesFailed,
      Dimensions: [{ Name: SERVICE_DIMENSION, Value: stack.stackName }],
      Statistic: 'Sum',
    });
    // The functions write their metrics with the stack's name as the service dimension.
    const resources = template.toJSON().Resources as Record<
      string,
      { Properties: { Environment: { Variables: Record<string, unknown> } } }
    >;
    for (const name of FUNCTION_NAMES) {
      expect(resources[fnId(name)]?.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME).toBe(
        stack.stackName,
      );
    }
  });

  test('the guard consumer: a failed batch, a dropped batch, an item past its budget, a conversion drop', () => {
    // The metrics the consumer writes (functions/adapters/guard/stream.ts), with no dimension but the service.
    for (const name of [
      METRIC.guardBatchFailures,
      METRIC.guardItemsOverBudget,
      METRIC.guardConversionDrops,
    ]) {
      alarm({
        Namespace: METRICS_NAMESPACE,
        MetricName: name,
        Dimensions: [{ Name: SERVICE_DIMENSION, Value: stack.stackName }],
        Period: 300,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      });
    }
    // The event source's on-failure destination: what Lambda gave up on after its retries.
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: ref(fnId('guardSignals')),
      MaximumRetryAttempts: 3,
      DestinationConfig: { OnFailure: { Destination: getAtt(guardDroppedBatchesId()) } },
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: getAtt(guardDroppedBatchesId(), 'QueueName') }],
      Statistic: 'Maximum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
    });
  });

  test("each stream consumer's lag past 5 minutes raises an alarm", () => {
    for (const name of ['guardSignals', 'webhookEvents'] as const) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'IteratorAge',
        Dimensions: [{ Name: 'FunctionName', Value: ref(fnId(name)) }],
        Statistic: 'Maximum',
        Period: 300,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 300_000,
      });
    }
  });

  test('an errors alarm per function and eleven more, none notifying anything unless a topic is configured', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', FUNCTION_NAMES.length + 11);
    for (const resource of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(resource.Properties.AlarmActions).toBeUndefined();
    }
  });
});

test('outputs', () => {
  template.hasOutput('ApiUrl', { Value: getAtt(logicalId(stack.api), 'ApiEndpoint') });
  template.hasOutput('TableName', { Value: ref(logicalId(stack.table)) });
  template.hasOutput('StateMachineArn', { Value: ref(logicalId(stack.stateMachine)) });
  template.hasOutput('CarrierKeySecretArn', { Value: ref(KEY_SECRET_LOGICAL_IDS.carrier) });
  template.hasOutput('WebhookKeySecretArn', { Value: ref(KEY_SECRET_LOGICAL_IDS.webhook) });
  template.hasOutput('ApiKeyTagSecretArn', { Value: ref(KEY_SECRET_LOGICAL_IDS.apiKeyTag) });
  template.hasOutput('WebhookDeadLetterQueueUrl', { Value: ref(logicalId(stack.webhookDeadLetterQueue)) });
  // Exactly these: docs/deploy.md lists them.
  expect(Object.keys(template.toJSON().Outputs as object).sort()).toEqual(
    [
      'ApiKeyTagSecretArn',
      'ApiUrl',
      'CarrierKeySecretArn',
      'ConsoleUrl',
      'ConsoleUserPoolId',
      'StateMachineArn',
      'TableName',
      'WebhookDeadLetterQueueUrl',
      'WebhookKeySecretArn',
    ].sort(),
  );
});

describe('cdk-nag AwsSolutions', () => {
  test('no unacknowledged finding, error or warning', () => {
    const report = new AwsSolutionsChecks().validateScope(app);
    const findings = report.violations.map(
      (v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );
    expect(findings).toEqual([]);
    expect(report.success).toBe(true);
    // Nothing from CDK itself either.
    expect(Annotations.fromStack(stack).findError('*', Match.anyValue())).toEqual([]);
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*'))).toEqual(
      [],
    );
  });

  test('the checks do find the acknowledged rules (so acknowledgments, not blind spots, keep it clean)', () => {
    const acknowledged = new Map<string, string>();
    const visit = (construct: IConstruct) => {
      for (const entry of construct.node.metadata) {
        if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
        for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
          acknowledged.set(id.replace(/^annotation::/i, ''), reason);
        }
      }
      construct.node.children.forEach(visit);
    };
    visit(app);
    expect([...acknowledged.keys()].sort()).toEqual([
      'AwsSolutions-APIG4',
      'AwsSolutions-COG3',
      'AwsSolutions-COG8',
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-L1',
      'AwsSolutions-SF1',
      // X-Ray off by default (otp:tracing).
      'AwsSolutions-SF2',
      'AwsSolutions-SMG4',
      // The guard consumer's on-failure queue (lib/constructs/guard-signals.ts): the end of the line.
      'AwsSolutions-SQS3',
    ]);
    // Every acknowledgment says why.
    for (const reason of acknowledged.values()) expect(reason.length).toBeGreaterThan(40);
  });
});

describe('configuration from context', () => {
  let custom: ReturnType<typeof synth>;
  beforeAll(() => {
    custom = synth(
      {
        'otp:codeTtlSeconds': '600',
        'otp:consoleRequestsPerMinute': '60',
        'otp:channelWaitSeconds': 0,
        'otp:allowedChannels': 'sms, whatsapp',
        'otp:carrierUrl': 'https://carrier.example.com/api/',
        'otp:throttleRateLimit': '20',
        'otp:throttleBurstLimit': '40',
        'otp:receiptThrottleRateLimit': '300',
        'otp:receiptThrottleBurstLimit': 600,
        'otp:receiptReservedConcurrency': '10',
        'otp:logRetentionDays': '90',
        'otp:alarmTopicArn': 'arn:aws:sns:eu-west-1:123456789012:ops',
      },
      false,
    );
  }, 60_000);
  afterAll(() => removeAssembly(custom.app));

  test('settings, channels and carrier URL reach every function', () => {
    const functions = custom.template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(FUNCTION_NAMES.length);
    for (const fn of Object.values(functions)) {
      expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables).toMatchObject({
        OTP_CODE_TTL_SECONDS: '600',
        OTP_CONSOLE_REQUESTS_PER_MINUTE: '60',
        OTP_CHANNEL_WAIT_SECONDS: '0',
        OTP_MAX_CHECK_ATTEMPTS: '5',
        OTP_ALLOWED_CHANNELS: 'sms,whatsapp',
        OTP_CARRIER_URL: 'https://carrier.example.com/api',
      });
    }
  });

  test('throttling, log retention and alarm actions', () => {
    custom.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 },
      RouteSettings: {
        'POST /v2/Callbacks/{Provider}': { ThrottlingRateLimit: 300, ThrottlingBurstLimit: 600 },
      },
    });
    for (const logGroup of Object.values(custom.template.findResources('AWS::Logs::LogGroup'))) {
      expect(logGroup.Properties.RetentionInDays).toBe(90);
    }
    for (const alarm of Object.values(custom.template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(alarm.Properties.AlarmActions).toEqual(['arn:aws:sns:eu-west-1:123456789012:ops']);
    }
  });

  test('otp:receiptReservedConcurrency reserves concurrency for the receipt function, and for no other', () => {
    const receiptId = custom.stack.resolve(
      (custom.stack.functions.receipt.node.defaultChild as CfnElement).logicalId,
    ) as string;
    const reserved = Object.entries(custom.template.findResources('AWS::Lambda::Function'))
      .filter(([, fn]) => fn.Properties.ReservedConcurrentExecutions !== undefined)
      .map(([id, fn]) => [id, fn.Properties.ReservedConcurrentExecutions]);
    expect(reserved).toEqual([[receiptId, 10]]);
  });

  test.each([
    ['otp:codeTtlSeconds', '0'],
    ['otp:maxCheckAttempts', '2.5'],
    ['otp:consoleRequestsPerMinute', '0'],
    ['otp:channelWaitSeconds', '-1'],
    ['otp:allowedChannels', 'sms,pigeon'],
    ['otp:allowedChannels', ','],
    ['otp:carrierUrl', 'http://carrier.example.com'],
    ['otp:carrierUrl', 'not a url'],
    ['otp:logRetentionDays', '31'],
    ['otp:throttleRateLimit', 'lots'],
    ['otp:receiptThrottleRateLimit', '0'],
    ['otp:receiptThrottleBurstLimit', '1.5'],
    ['otp:receiptReservedConcurrency', '0'],
    ['otp:webhookSenderMaxConcurrency', '1'],
    ['otp:tracing', 'yes'],
    ['otp:webhookSenderMaxConcurrency', '1001'],
    ['otp:alarmTopicArn', 'ops-topic'],
  ])('rejects %s=%s at synth time', (key, value) => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'cdk.out'));
    try {
      expect(() => readConfig(new App({ context: { [key]: value }, outdir }).node)).toThrow(key);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  test.each([
    ['otp:receiptReservedConcurency', 'did you mean otp:receiptReservedConcurrency?'],
    ['otp:alarmTopicArm', 'did you mean otp:alarmTopicArn?'],
    ['otp:codettlseconds', 'did you mean otp:codeTtlSeconds?'],
    ['otp:consoleRequestPerMinute', 'did you mean otp:consoleRequestsPerMinute?'],
    ['otp:somethingElse', 'is not a setting of this stack: docs/deploy.md'],
  ])('refuses the unknown key %s, naming the one meant', (key, words) => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'cdk.out'));
    try {
      expect(() => readConfig(new App({ context: { [key]: '10' }, outdir }).node)).toThrow(words);
      // Keys of other tools pass, and so do the stack's name and a removed key (refused with its reason).
      const others = { '@aws-cdk/core:newStyleStackSynthesis': true, 'otp:stackName': 'Otp' };
      expect(() => readConfig(new App({ context: others, outdir }).node)).not.toThrow();
      expect(() =>
        readConfig(new App({ context: { 'otp:awsSmsSuccessfulMeans': 'accepted' }, outdir }).node),
      ).toThrow('was removed');
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});

describe('receipt callbacks on the receipt function’s own URL (otp:receiptFunctionUrl)', () => {
  let onUrl: ReturnType<typeof synth>;
  beforeAll(() => {
    onUrl = synth({ 'otp:receiptFunctionUrl': true, 'otp:receiptReservedConcurrency': '10' }, false);
  }, 60_000);
  afterAll(() => removeAssembly(onUrl.app));
  const idOf = (construct: IConstruct) =>
    onUrl.stack.resolve((construct.node.defaultChild as CfnElement).logicalId) as string;

  test('the receipt function has a public URL (the signature is checked in the handler) and its reserved concurrency', () => {
    const urls = Object.values(onUrl.template.findResources('AWS::Lambda::Url'));
    expect(urls).toHaveLength(1);
    expect(urls[0]!.Properties).toMatchObject({
      AuthType: 'NONE',
      TargetFunctionArn: { 'Fn::GetAtt': [idOf(onUrl.stack.functions.receipt), 'Arn'] },
    });
    const receipt = onUrl.template.toJSON().Resources[idOf(onUrl.stack.functions.receipt)];
    expect(receipt.Properties.ReservedConcurrentExecutions).toBe(10);
    // A function URL made since October 2025 answers 403 unless both actions are granted; the public invoke is
    // only through the URL (InvokedViaFunctionUrl), not a direct Invoke by anyone.
    const publicGrants = Object.values(onUrl.template.findResources('AWS::Lambda::Permission'))
      .filter((permission) => permission.Properties.Principal === '*')
      .map(({ Properties: { Action, FunctionName, FunctionUrlAuthType, InvokedViaFunctionUrl } }) => ({
        Action,
        FunctionName,
        FunctionUrlAuthType,
        InvokedViaFunctionUrl,
      }));
    const receiptArn = { 'Fn::GetAtt': [idOf(onUrl.stack.functions.receipt), 'Arn'] };
    expect(publicGrants).toEqual(
      expect.arrayContaining([
        { Action: 'lambda:InvokeFunctionUrl', FunctionName: receiptArn, FunctionUrlAuthType: 'NONE' },
        { Action: 'lambda:InvokeFunction', FunctionName: receiptArn, InvokedViaFunctionUrl: true },
      ]),
    );
    expect(publicGrants).toHaveLength(2);
    onUrl.template.hasOutput('ReceiptUrl', {
      Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('Url'), 'FunctionUrl'] },
    });
    // The reservation is the route's only limit: being throttled at it alarms.
    onUrl.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Throttles',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: idOf(onUrl.stack.functions.receipt) } }],
    });
    expect(
      Object.values(template.findResources('AWS::CloudWatch::Alarm')).filter(
        (alarm) => alarm.Properties.MetricName === 'Throttles',
      ),
    ).toEqual([]);
  });

  test('the HTTP API has no receipt route, and its 404/405 table leaves it out', () => {
    const receiptKey = `${FUNCTIONS.receipt.route!.method} ${FUNCTIONS.receipt.route!.path}`;
    const routeKeys = Object.values(onUrl.template.findResources('AWS::ApiGatewayV2::Route')).map(
      (route) => route.Properties.RouteKey as string,
    );
    expect(routeKeys).not.toContain(receiptKey);
    expect(routeKeys).toContain('POST /v2/Services/{ServiceSid}/Verifications');
    const fetch = onUrl.template.toJSON().Resources[idOf(onUrl.stack.functions.fetch)];
    const table = routesFromEnv(fetch.Properties.Environment.Variables[API_ROUTES_ENV] as string);
    expect(table.map(({ method, path }) => `${method} ${path}`)).toEqual(
      ROUTES.filter((route) => route.name !== 'receipt').map(({ method, path }) => `${method} ${path}`),
    );
    const [stage] = Object.values(onUrl.template.findResources('AWS::ApiGatewayV2::Stage'));
    expect(Object.keys(stage!.Properties.RouteSettings as object)).not.toContain(receiptKey);
    expect(Object.keys(stage!.Properties.RouteSettings as object)).toContain(
      'POST /v2/Services/{ServiceSid}/Verifications',
    );
    // By default, no URL: the receipts come through the API.
    expect(template.findResources('AWS::Lambda::Url')).toEqual({});
  });

  test('cdk-nag finds nothing new', () => {
    const report = new AwsSolutionsChecks().validateScope(onUrl.app);
    expect(report.violations.map((v) => `${v.severity} ${v.ruleName}`)).toEqual([]);
    expect(report.success).toBe(true);
    expect(Annotations.fromStack(onUrl.stack).findError('*', Match.anyValue())).toEqual([]);
  });

  test.each([
    [{ 'otp:receiptFunctionUrl': true }, /needs otp:receiptReservedConcurrency/],
    [{ 'otp:receiptFunctionUrl': 'yes', 'otp:receiptReservedConcurrency': 10 }, /must be true or false/],
  ])('refuses %j at synth time', (context, message) => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'cdk.out'));
    try {
      expect(() => readConfig(new App({ context, outdir }).node)).toThrow(message);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
