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
import { readConfig } from '../../lib/config';
import { FAILED_DELIVERY_PATTERN, OtpStack } from '../../lib/otp-stack';

const ROOT = path.join(__dirname, '..', '..');
/** Synthesize with the same feature flags as `cdk synth`. */
const CDK_CONTEXT = (JSON.parse(readFileSync(path.join(ROOT, 'cdk.json'), 'utf8')) as { context: object })
  .context;

type FunctionName = keyof OtpStack['functions'];
const FUNCTION_NAMES: FunctionName[] = [
  'send',
  'check',
  'fetch',
  'receipt',
  'deliver',
  'afterWait',
  'sweeper',
  'webhookEvents',
  'webhookSender',
];
/** Their IAM, event sources and queues are checked in webhooks.test.ts. */
const WEBHOOK_FUNCTIONS: FunctionName[] = ['webhookEvents', 'webhookSender'];
const NON_WEBHOOK = FUNCTION_NAMES.filter((name) => !WEBHOOK_FUNCTIONS.includes(name));
const ENTRIES: Record<FunctionName, string> = {
  send: 'functions/api/send.ts',
  check: 'functions/api/check.ts',
  fetch: 'functions/api/fetch.ts',
  receipt: 'functions/api/receipt.ts',
  deliver: 'functions/tasks/deliver.ts',
  afterWait: 'functions/tasks/after-wait.ts',
  sweeper: 'functions/tasks/sweeper.ts',
  webhookEvents: 'functions/webhooks/events.ts',
  webhookSender: 'functions/webhooks/sender.ts',
};
/** The functions that start the delivery workflow: send, and the sweeper that restarts stalled deliveries. */
const STARTS_DELIVERY: FunctionName[] = ['send', 'sweeper'];
const TIMEOUTS: Record<FunctionName, number> = {
  send: 10,
  check: 10,
  fetch: 10,
  receipt: 10,
  deliver: 30,
  afterWait: 30,
  sweeper: 50,
  webhookEvents: 30,
  webhookSender: 30,
};
const SETTING_DEFAULTS = {
  OTP_CODE_TTL_SECONDS: '300',
  OTP_MAX_CHECK_ATTEMPTS: '5',
  OTP_BURST_LIMIT: '3',
  OTP_BURST_WINDOW_SECONDS: '300',
  OTP_HOURLY_LIMIT: '10',
  OTP_HOURLY_WINDOW_SECONDS: '3600',
  OTP_KEY_REQUESTS_PER_MINUTE: '120',
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
const ref = (id: string) => ({ Ref: id });

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}
/** Every statement of the inline policies attached to a role, actions sorted, one resource per entry. */
function statementsOf(roleId: string): { actions: string[]; resource: unknown }[] {
  const out: { actions: string[]; resource: unknown }[] = [];
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = resource.Properties.Roles as unknown[];
    if (!roles.some((role) => JSON.stringify(role) === JSON.stringify(ref(roleId)))) continue;
    const document = resource.Properties.PolicyDocument as { Statement: Statement[] };
    for (const statement of document.Statement) {
      expect(statement.Effect).toBe('Allow');
      const actions = [statement.Action].flat().sort();
      for (const target of [statement.Resource].flat()) out.push({ actions, resource: target });
    }
  }
  return out;
}
const sortStatements = (statements: { actions: string[]; resource: unknown }[]) =>
  [...statements].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describe('functions', () => {
  test('nine Node.js 22 arm64 functions, 256 MB, traced, each with its own log group', () => {
    template.resourceCountIs('AWS::Lambda::Function', 9);
    for (const name of FUNCTION_NAMES) {
      const logGroupId = logicalId(stack.logGroups[name]);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        MemorySize: 256,
        Timeout: TIMEOUTS[name],
        TracingConfig: { Mode: 'Active' },
        Handler: 'index.handler',
        LoggingConfig: { LogGroup: ref(logGroupId) },
        Role: getAtt(logicalId(stack.functions[name].role!)),
      });
      expect(resources[fnId(name)]!.Properties.LoggingConfig).toEqual({ LogGroup: ref(logGroupId) });
      expect(resources[logGroupId]!.Properties.RetentionInDays).toBe(30);
    }
  });

  test('each function is bundled from its own entry file, minified, with a source map', () => {
    for (const name of FUNCTION_NAMES) {
      const code = resources[fnId(name)]!.Properties.Code as { S3Key: string };
      const assetDir = path.join(app.outdir, `asset.${code.S3Key.replace(/\.zip$/, '')}`);
      const map = JSON.parse(readFileSync(path.join(assetDir, 'index.js.map'), 'utf8')) as {
        sources: string[];
      };
      const entry = ENTRIES[name];
      expect(map.sources.some((source) => source.endsWith(entry))).toBe(true);
      // ... and no other function's entry: one bundle per handler.
      for (const other of FUNCTION_NAMES.filter((n) => n !== name)) {
        expect(map.sources.some((source) => source.endsWith(ENTRIES[other]))).toBe(false);
      }
      const bundle = readFileSync(path.join(assetDir, 'index.js'), 'utf8');
      expect(bundle).toMatch(/sourceMappingURL=index\.js\.map/);
      // Minified: far fewer lines than characters.
      expect(bundle.split('\n').length).toBeLessThan(bundle.length / 1000);
    }
  });

  test('environment: table, secret ARN, settings with spec defaults, channels, source maps', () => {
    const stateMachineId = logicalId(stack.stateMachine);
    for (const name of FUNCTION_NAMES) {
      const variables = (
        resources[fnId(name)]!.Properties.Environment as { Variables: Record<string, unknown> }
      ).Variables;
      const expected: Record<string, unknown> = {
        TABLE_NAME: ref(logicalId(stack.table)),
        OTP_SECRETS_ARN: ref(logicalId(stack.secret)),
        OTP_ALLOWED_CHANNELS: 'sms,whatsapp,viber,rcs,sna',
        ...SETTING_DEFAULTS,
        NODE_OPTIONS: '--enable-source-maps',
      };
      if (STARTS_DELIVERY.includes(name)) expected.STATE_MACHINE_ARN = ref(stateMachineId);
      if (WEBHOOK_FUNCTIONS.includes(name)) expected.WEBHOOK_QUEUE_URL = ref(logicalId(stack.webhookQueue));
      if (name === 'webhookSender') {
        expected.WEBHOOK_DEAD_LETTER_QUEUE_URL = ref(logicalId(stack.webhookDeadLetterQueue));
      }
      // Exactly these: no carrier URL unless configured, nothing else.
      expect(variables).toEqual(expected);
    }
  });
});

describe('HTTP API', () => {
  const routes: [string, FunctionName][] = [
    ['POST /v2/Services/{ServiceSid}/Verifications', 'send'],
    ['POST /v2/Services/{ServiceSid}/VerificationCheck', 'check'],
    ['GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}', 'fetch'],
    ['POST /v2/Callbacks/{Provider}', 'receipt'],
  ];

  test('exactly the four routes', () => {
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    const keys = Object.values(resources)
      .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
      .map((r) => r.Properties.RouteKey);
    expect(keys.sort()).toEqual(routes.map(([key]) => key).sort());
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

  test('no authorizer at the gateway: the handlers authenticate (X-API-Key, receipt signatures)', () => {
    for (const route of Object.values(template.findResources('AWS::ApiGatewayV2::Route'))) {
      expect(route.Properties.AuthorizationType).toBe('NONE');
    }
  });
});

describe('IAM least privilege', () => {
  const XRAY = { actions: ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'], resource: '*' };
  const expectedTableActions: Record<FunctionName, string[]> = {
    send: [
      'dynamodb:BatchGetItem',
      'dynamodb:ConditionCheckItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
    ],
    check: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    fetch: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    receipt: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    deliver: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    afterWait: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    sweeper: [],
    webhookEvents: ['dynamodb:Query'],
    webhookSender: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
  };

  test.each(NON_WEBHOOK)('%s: exactly its table actions, the secret, its own log group', (name) => {
    const roleId = logicalId(stack.functions[name].role!);
    const expected: { actions: string[]; resource: unknown }[] = [
      { actions: ['secretsmanager:GetSecretValue'], resource: ref(logicalId(stack.secret)) },
      {
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resource: getAtt(logicalId(stack.logGroups[name])),
      },
      XRAY,
    ];
    if (expectedTableActions[name].length > 0) {
      expected.push({ actions: expectedTableActions[name], resource: getAtt(logicalId(stack.table)) });
    }
    if (STARTS_DELIVERY.includes(name)) {
      expected.push({ actions: ['states:StartExecution'], resource: ref(logicalId(stack.stateMachine)) });
    }
    if (name === 'sweeper') {
      // Query on the sparse pending-delivery index only: not on the table, not on any other index.
      expected.push({
        actions: ['dynamodb:Query'],
        resource: {
          'Fn::Join': [
            '',
            [getAtt(logicalId(stack.table)), `/index/${TABLE_SCHEMA.indexes.pendingDelivery.name}`],
          ],
        },
      });
    }
    expect(sortStatements(statementsOf(roleId))).toEqual(sortStatements(expected));
    // No managed policies (AWSLambdaBasicExecutionRole would allow logs:CreateLogGroup on *).
    expect(resources[roleId]!.Properties.ManagedPolicyArns).toBeUndefined();
    expect(resources[roleId]!.Properties.Policies).toBeUndefined();
  });

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

  test('no wildcard action anywhere; "*" resources only for X-Ray, Step Functions log delivery and ListStreams', () => {
    for (const resource of Object.values(resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      for (const statement of (resource.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
        const actions = [statement.Action].flat();
        for (const action of actions) expect(action).not.toMatch(/\*/);
        if ([statement.Resource].flat().includes('*')) {
          // dynamodb:ListStreams: the webhook events function's stream event source (no resource-level permission).
          for (const action of actions) expect(action).toMatch(/^(xray:|logs:|dynamodb:ListStreams$)/);
          expect(actions.some((a) => a.startsWith('logs:Put') && a !== 'logs:PutResourcePolicy')).toBe(false);
        }
      }
    }
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
          { AttributeName: TABLE_SCHEMA.indexes.pendingDelivery.partitionKey, AttributeType: 'S' },
          { AttributeName: TABLE_SCHEMA.indexes.pendingDelivery.sortKey, AttributeType: 'S' },
        ]),
        TimeToLiveSpecification: { AttributeName: TABLE_SCHEMA.ttlAttribute, Enabled: true },
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
        ProvisionedThroughput: Match.absent(),
      },
    });
  });

  test('every index of TABLE_SCHEMA, keys only, string keys (the sparse pending-delivery outbox)', () => {
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table'));
    expect(table!.Properties.GlobalSecondaryIndexes).toEqual(
      Object.values(TABLE_SCHEMA.indexes).map((index) => ({
        IndexName: index.name,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: 'HASH' },
          { AttributeName: index.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      })),
    );
    expect(TABLE_SCHEMA.indexes.pendingDelivery.name).toBe('pending-delivery');
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
});

describe('state machine', () => {
  const aslPath = path.join(ROOT, 'statemachine/delivery.asl.json');

  test('Express, logged without execution data, traced', () => {
    template.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineType: 'EXPRESS',
      TracingConfiguration: { Enabled: true },
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
    expect(taskResources.sort()).toEqual(
      [JSON.stringify(getAtt(fnId('afterWait'))), JSON.stringify(getAtt(fnId('deliver')))]
        .map((s) => s.replace(/"/g, "'"))
        .sort(),
    );
  });

  test.each(STARTS_DELIVERY)('%s may start it (and gets its ARN)', (name) => {
    const variables = (
      resources[fnId(name)]!.Properties.Environment as { Variables: Record<string, unknown> }
    ).Variables;
    expect(variables.STATE_MACHINE_ARN).toEqual(ref(logicalId(stack.stateMachine)));
  });
});

describe('secrets', () => {
  test('the master key is generated by Secrets Manager: no value in the template', () => {
    template.resourceCountIs('AWS::SecretsManager::Secret', 1);
    template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: {
        SecretStringTemplate: '{}',
        GenerateStringKey: 'masterKey',
        PasswordLength: 64,
        ExcludePunctuation: true,
      },
      SecretString: Match.absent(),
    });
    template.resourceCountIs('AWS::SSM::Parameter', 0);
  });

  test('no environment variable holds anything that looks like a key', () => {
    for (const name of FUNCTION_NAMES) {
      const variables = (
        resources[fnId(name)]!.Properties.Environment as { Variables: Record<string, unknown> }
      ).Variables;
      for (const [variable, value] of Object.entries(variables)) {
        // Anything secret-sounding may only be a reference (the secret's ARN), never a literal.
        if (/SECRET|TOKEN|PASSWORD|MASTER/i.test(variable)) expect(typeof value).not.toBe('string');
        if (typeof value !== 'string') continue; // references (Ref/GetAtt) to the table, secret, state machine
        expect(value).not.toMatch(/[A-Za-z0-9+/_=-]{24,}/);
      }
      expect(variables.OTP_SECRETS_ARN).toEqual(ref(logicalId(stack.secret)));
    }
  });

  test('nothing in the template reads a secret value into plain text', () => {
    const text = JSON.stringify(template.toJSON());
    expect(text).not.toMatch(/resolve:secretsmanager|resolve:ssm-secure/);
    expect(text).not.toMatch(/"masterKey"\s*:/);
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

  test('FAILED deliveries, counted from both task log groups', () => {
    expect(FAILED_DELIVERY_PATTERN).toBe('{ $.msg = "delivery.ended" && $.deliveryStatus = "FAILED" }');
    template.resourceCountIs('AWS::Logs::MetricFilter', 2);
    for (const name of ['deliver', 'afterWait'] as const) {
      template.hasResourceProperties('AWS::Logs::MetricFilter', {
        LogGroupName: ref(logicalId(stack.logGroups[name])),
        FilterPattern: FAILED_DELIVERY_PATTERN,
        MetricTransformations: [
          { MetricNamespace: 'OtpVerify/OtpVerify', MetricName: 'DeliveriesFailed', MetricValue: '1' },
        ],
      });
    }
    alarm({ Namespace: 'OtpVerify/OtpVerify', MetricName: 'DeliveriesFailed' });
  });

  test('thirteen alarms in all, none notifying anything unless a topic is configured', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', 13);
    for (const resource of Object.values(template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(resource.Properties.AlarmActions).toBeUndefined();
    }
  });
});

test('outputs', () => {
  template.hasOutput('ApiUrl', { Value: getAtt(logicalId(stack.api), 'ApiEndpoint') });
  template.hasOutput('TableName', { Value: ref(logicalId(stack.table)) });
  template.hasOutput('StateMachineArn', { Value: ref(logicalId(stack.stateMachine)) });
  template.hasOutput('SecretArn', { Value: ref(logicalId(stack.secret)) });
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
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-L1',
      'AwsSolutions-SF1',
      'AwsSolutions-SMG4',
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
        'otp:channelWaitSeconds': 0,
        'otp:allowedChannels': 'sms, whatsapp',
        'otp:carrierUrl': 'https://carrier.example.com/api/',
        'otp:throttleRateLimit': '20',
        'otp:throttleBurstLimit': '40',
        'otp:logRetentionDays': '90',
        'otp:alarmTopicArn': 'arn:aws:sns:eu-west-1:123456789012:ops',
      },
      false,
    );
  }, 60_000);
  afterAll(() => removeAssembly(custom.app));

  test('settings, channels and carrier URL reach every function', () => {
    const functions = custom.template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(9);
    for (const fn of Object.values(functions)) {
      expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables).toMatchObject({
        OTP_CODE_TTL_SECONDS: '600',
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
    });
    for (const logGroup of Object.values(custom.template.findResources('AWS::Logs::LogGroup'))) {
      expect(logGroup.Properties.RetentionInDays).toBe(90);
    }
    for (const alarm of Object.values(custom.template.findResources('AWS::CloudWatch::Alarm'))) {
      expect(alarm.Properties.AlarmActions).toEqual(['arn:aws:sns:eu-west-1:123456789012:ops']);
    }
  });

  test.each([
    ['otp:codeTtlSeconds', '0'],
    ['otp:maxCheckAttempts', '2.5'],
    ['otp:channelWaitSeconds', '-1'],
    ['otp:allowedChannels', 'sms,pigeon'],
    ['otp:allowedChannels', ','],
    ['otp:carrierUrl', 'http://carrier.example.com'],
    ['otp:carrierUrl', 'not a url'],
    ['otp:logRetentionDays', '31'],
    ['otp:throttleRateLimit', 'lots'],
    ['otp:alarmTopicArn', 'ops-topic'],
  ])('rejects %s=%s at synth time', (key, value) => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'cdk.out'));
    try {
      expect(() => readConfig(new App({ context: { [key]: value }, outdir }).node)).toThrow(key);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
