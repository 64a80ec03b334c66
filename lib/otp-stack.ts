import * as path from 'node:path';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CfnStage,
  HttpApi,
  HttpMethod,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogLevel as EsbuildLogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { worstCallMs } from '../functions/adapters/dynamodb/client';
import { PARTITION_FAMILY, TABLE_SCHEMA, type PartitionFamily } from '../functions/adapters/dynamodb/keys';
import { KEY_GROUPS, KEY_GROUP_NAMES, KEY_SECRET_FIELD, type KeyGroup } from '../functions/adapters/keyring';
import { readConfig, settingsEnvironment, type OtpConfig } from './config';

/** Repository root: function entries, the lock file and the state machine definition are found from here. */
const ROOT = path.join(__dirname, '..');

/** The pattern the FAILED-deliveries metric counts; the task handlers log exactly one such line per ended delivery. */
export const FAILED_DELIVERY_PATTERN = '{ $.msg = "delivery.ended" && $.deliveryStatus = "FAILED" }';

type FunctionName =
  | 'send'
  | 'check'
  | 'fetch'
  | 'receipt'
  | 'deliver'
  | 'afterWait'
  | 'sweeper'
  | 'webhookEvents'
  | 'webhookSender';
type IndexName = keyof typeof TABLE_SCHEMA.indexes;

/** DynamoDB actions on the table, allowed only on items whose partition key is of one of `families`. */
interface TableGrant {
  actions: string[];
  families: PartitionFamily[];
}

interface FunctionSpec {
  /** Construct id prefix, also the function's description. */
  id: string;
  entry: string;
  description: string;
  timeout: Duration;
  /**
   * Exactly the DynamoDB actions the handler uses, on the table only, each limited (`dynamodb:LeadingKeys`) to
   * the item families it touches them on.
   */
  table: TableGrant[];
  /** DynamoDB actions on one of the table's indexes (`TABLE_SCHEMA.indexes`), on that index only. */
  indexActions?: Partial<Record<IndexName, string[]>>;
  /** Starts the delivery workflow: gets `STATE_MACHINE_ARN` and `states:StartExecution` on it. */
  startsDelivery?: boolean;
  /**
   * The key groups of the purposes the handler uses (functions/adapters/keyring.ts): it gets their secrets' ARNs
   * in its environment and may read those secrets and no other. Empty: no key, no secretsmanager permission.
   */
  keys: KeyGroup[];
}

const API_TIMEOUT = Duration.seconds(10);
/**
 * The send path makes four calls that must end in a decision (the key's write, the batch read, the accepting
 * transaction, and when its answer is lost, the read that tells whether the charge stands), each bounded by the
 * SDK clients' time-outs and retries. Lambda ending the send first would answer 5xx for a send that may be
 * charged; API Gateway's HTTP API waits at most 30 s for its integration.
 */
export const SEND_TIMEOUT = Duration.seconds(Math.ceil((4 * worstCallMs()) / 1000));
const TASK_TIMEOUT = Duration.seconds(30);
const READ_UPDATE = ['dynamodb:GetItem', 'dynamodb:UpdateItem'];

const FUNCTIONS: Record<FunctionName, FunctionSpec> = {
  send: {
    id: 'Send',
    entry: 'functions/api/send.ts',
    description: 'POST /v2/Services/{ServiceSid}/Verifications',
    timeout: SEND_TIMEOUT,
    // The accepting TransactWriteItems needs the per-item actions it contains (Put, Update, ConditionCheck):
    // the service's balance and charge line, the verification, the number's send log, the idempotency record;
    // the API key's own item authenticates and counts the request.
    table: [
      {
        actions: [
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:UpdateItem',
          'dynamodb:PutItem',
          'dynamodb:ConditionCheckItem',
        ],
        families: ['service', 'number', 'idempotency', 'verification', 'apiKey'],
      },
    ],
    startsDelivery: true,
    // Hashes the code (check compares) and seals it for the delivery tasks.
    keys: ['codeHash', 'codeSeal'],
  },
  check: {
    id: 'Check',
    entry: 'functions/api/check.ts',
    description: 'POST /v2/Services/{ServiceSid}/VerificationCheck',
    timeout: API_TIMEOUT,
    table: [{ actions: READ_UPDATE, families: ['verification', 'apiKey'] }],
    keys: ['codeHash'],
  },
  fetch: {
    id: 'Fetch',
    entry: 'functions/api/fetch.ts',
    description: 'GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}',
    timeout: API_TIMEOUT,
    // UpdateItem only for the API key's own item (the per-key limit): fetch never writes a verification.
    table: [
      { actions: ['dynamodb:GetItem'], families: ['verification', 'apiKey'] },
      { actions: ['dynamodb:UpdateItem'], families: ['apiKey'] },
    ],
    // It reads a record and shows it: no code, no key.
    keys: [],
  },
  receipt: {
    id: 'Receipt',
    entry: 'functions/api/receipt.ts',
    description: 'POST /v2/Callbacks/{Provider} (signed delivery receipts)',
    timeout: API_TIMEOUT,
    // The verification the receipt names (no API key: the carrier's signature authenticates).
    table: [{ actions: READ_UPDATE, families: ['verification'] }],
    keys: ['carrier'],
  },
  deliver: {
    id: 'Deliver',
    entry: 'functions/tasks/deliver.ts',
    description: 'Delivery workflow: hand the message to one channel',
    timeout: TASK_TIMEOUT,
    // The verification (claims, outcomes, the end), and the number when every channel rejected it.
    table: [{ actions: READ_UPDATE, families: ['verification', 'number'] }],
    // Opens the sealed code; authenticates to the carrier.
    keys: ['codeSeal', 'carrier'],
  },
  afterWait: {
    id: 'AfterWait',
    entry: 'functions/tasks/after-wait.ts',
    description:
      'Delivery workflow: after the wait, stop on a receipt or move to the next channel; settle after a task failed',
    timeout: TASK_TIMEOUT,
    table: [{ actions: READ_UPDATE, families: ['verification', 'number'] }],
    keys: ['codeSeal', 'carrier'],
  },
  sweeper: {
    id: 'Sweeper',
    entry: 'functions/tasks/sweeper.ts',
    description:
      'Every minute: restart deliveries whose workflow did not start, settle those claimed but never ended',
    // Well under the one-minute schedule, so two runs do not overlap.
    timeout: Duration.seconds(50),
    // Finds both kinds in the sparse index; settling an overdue delivery reads and ends its verification and, as
    // the workflow's end does, may record the channels that rejected the number.
    table: [{ actions: READ_UPDATE, families: ['verification', 'number'] }],
    indexActions: { pendingDelivery: ['dynamodb:Query'] },
    startsDelivery: true,
    keys: [],
  },
  webhookEvents: {
    id: 'WebhookEvents',
    entry: 'functions/webhooks/events.ts',
    description: 'Table stream to webhook jobs: an event per status change, a job per enabled endpoint',
    timeout: Duration.seconds(30),
    // One Query under the service for its endpoints; the stream itself is read through the event source's grant.
    table: [{ actions: ['dynamodb:Query'], families: ['service'] }],
    // It builds and queues events; signing is the sender's job.
    keys: [],
  },
  webhookSender: {
    id: 'WebhookSender',
    entry: 'functions/webhooks/sender.ts',
    description: 'Signs and posts webhooks, retries on the schedule, writes EXPIRED back at expires_at',
    // A batch of up to 10 posts runs at once, each cut off after 5 s.
    timeout: Duration.seconds(30),
    // GetItem: the endpoint (URL, sealed secret), under its service; UpdateItem: the expiry write-back. Split so
    // that the sender can change no service item (balance, endpoints) and read no verification.
    table: [
      { actions: ['dynamodb:GetItem'], families: ['service'] },
      { actions: ['dynamodb:UpdateItem'], families: ['verification'] },
    ],
    // Opens the endpoints' sealed signing secrets.
    keys: ['webhook'],
  },
};

/**
 * Construct id (hence logical id: never change it, see createKeySecret) and description of each key secret.
 */
const KEY_SECRETS: Record<KeyGroup, { id: string; description: string }> = {
  codeHash: {
    id: 'CodeHashKey',
    description: 'code-hash key (send, check); replacing it fails every code in flight',
  },
  codeSeal: {
    id: 'CodeSealKey',
    description: 'code-seal key (send, delivery tasks); replacing it fails the deliveries in flight',
  },
  carrier: {
    id: 'CarrierKey',
    description:
      'carrier key (carrier token, receipt signatures); replacing it means reconfiguring the carrier',
  },
  webhook: {
    id: 'WebhookKey',
    description: 'webhook key (seals webhook secrets); replacing it needs a webhook rotate of every endpoint',
  },
};

/** A message the sender kept failing on (not a failed delivery: those are retried by schedule) moves to the DLQ. */
const WEBHOOK_MAX_RECEIVES = 5;

/** The HTTP API's routes, each to its function. */
const ROUTES: { method: HttpMethod; path: string; fn: FunctionName }[] = [
  { method: HttpMethod.POST, path: '/v2/Services/{ServiceSid}/Verifications', fn: 'send' },
  { method: HttpMethod.POST, path: '/v2/Services/{ServiceSid}/VerificationCheck', fn: 'check' },
  { method: HttpMethod.GET, path: '/v2/Services/{ServiceSid}/Verifications/{VerificationSid}', fn: 'fetch' },
  { method: HttpMethod.POST, path: '/v2/Callbacks/{Provider}', fn: 'receipt' },
];

export class OtpStack extends Stack {
  readonly config: OtpConfig;
  readonly table: dynamodb.Table;
  /** One generated secret per key group (functions/adapters/keyring.ts), read by the functions of its purposes. */
  readonly keySecrets: Record<KeyGroup, secretsmanager.Secret>;
  readonly functions: Record<FunctionName, NodejsFunction>;
  readonly logGroups: Record<FunctionName, logs.LogGroup>;
  readonly stateMachine: sfn.StateMachine;
  readonly api: HttpApi;
  readonly webhookQueue: sqs.Queue;
  readonly webhookDeadLetterQueue: sqs.Queue;

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const config = (this.config = readConfig(this.node));

    // One table for everything; its keys come from the handlers' own schema so code and table cannot drift.
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: TABLE_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_SCHEMA.sortKey, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: TABLE_SCHEMA.ttlAttribute,
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      // Balances, API keys and the charge ledger outlive the stack.
      removalPolicy: RemovalPolicy.RETAIN,
      // The webhook events' outbox: each status change is read from the stream, no request writes anything more.
      stream: TABLE_SCHEMA.streamViewType as dynamodb.StreamViewType,
    });
    for (const index of Object.values(TABLE_SCHEMA.indexes)) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType.KEYS_ONLY,
      });
    }

    this.keySecrets = Object.fromEntries(
      KEY_GROUP_NAMES.map((group) => [group, this.createKeySecret(group)]),
    ) as Record<KeyGroup, secretsmanager.Secret>;

    const commonEnvironment: Record<string, string> = {
      TABLE_NAME: this.table.tableName,
      OTP_ALLOWED_CHANNELS: config.allowedChannels.join(','),
      ...settingsEnvironment(config.settings),
      ...(config.carrierUrl ? { OTP_CARRIER_URL: config.carrierUrl } : {}),
      // Stack traces point at the TypeScript sources (the bundles ship with source maps).
      NODE_OPTIONS: '--enable-source-maps',
    };

    const functions: Partial<Record<FunctionName, NodejsFunction>> = {};
    const logGroups: Partial<Record<FunctionName, logs.LogGroup>> = {};
    for (const [name, spec] of Object.entries(FUNCTIONS) as [FunctionName, FunctionSpec][]) {
      const logGroup = new logs.LogGroup(this, `${spec.id}Logs`, {
        retention: config.logRetention,
        // Logs go with the stack; the data that matters is in the retained table.
        removalPolicy: RemovalPolicy.DESTROY,
      });
      // An explicit role instead of AWSLambdaBasicExecutionRole: writes to this function's log group only.
      const role = new iam.Role(this, `${spec.id}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `Execution role of the ${spec.id} function`,
      });
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [logGroup.logGroupArn],
        }),
      );

      const fn = new NodejsFunction(this, `${spec.id}Function`, {
        entry: path.join(ROOT, spec.entry),
        handler: 'handler',
        description: spec.description,
        projectRoot: ROOT,
        depsLockFilePath: path.join(ROOT, 'package-lock.json'),
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture: lambda.Architecture.ARM_64,
        // 256 MB: Lambda's CPU share grows with memory; this halves cold start and HMAC/HKDF time against
        // 128 MB for about the same cost per request, while the I/O-bound handlers gain little beyond it.
        memorySize: 256,
        timeout: spec.timeout,
        role,
        logGroup,
        tracing: lambda.Tracing.ACTIVE,
        environment: {
          ...commonEnvironment,
          // The ARNs of its own key secrets only; the values are read at cold start (functions/runtime.ts).
          ...Object.fromEntries(
            spec.keys.map((group) => [KEY_GROUPS[group].env, this.keySecrets[group].secretArn]),
          ),
        },
        bundling: {
          minify: true,
          sourceMap: true,
          // Maps without the sources inlined: names and lines resolve, the bundle stays small.
          sourcesContent: false,
          target: 'node22',
          format: OutputFormat.CJS,
          // Prefer ESM entry points so esbuild can tree-shake the AWS SDK, zod and middy.
          mainFields: ['module', 'main'],
          // Use the AWS SDK v3 the Node.js 22 runtime ships: bundles drop from ~700 KB to under 400 KB and cold
          // starts parse a third of the code (`npm run bench`). The runtime's SDK must be 3.521.0 or later
          // (requestHandler options as an object, ReturnValuesOnConditionCheckFailure); docs/deploy.md.
          bundleAwsSDK: false,
          forceDockerBundling: false,
          logLevel: EsbuildLogLevel.ERROR,
        },
      });
      for (const grant of spec.table) {
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions: grant.actions,
            resources: [this.table.tableArn],
            // ForAllValues: every partition key the request names (each key of a BatchGetItem, each item of a
            // TransactWriteItems) must be of these families.
            conditions: {
              'ForAllValues:StringLike': {
                'dynamodb:LeadingKeys': grant.families.map((family) => `${PARTITION_FAMILY[family]}*`),
              },
            },
          }),
        );
      }
      for (const [index, actions] of Object.entries(spec.indexActions ?? {}) as [IndexName, string[]][]) {
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions,
            resources: [`${this.table.tableArn}/index/${TABLE_SCHEMA.indexes[index].name}`],
          }),
        );
      }
      if (spec.keys.length > 0) {
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['secretsmanager:GetSecretValue'],
            resources: spec.keys.map((group) => this.keySecrets[group].secretArn),
          }),
        );
      }
      Validations.of(role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'Only the X-Ray statement added by active tracing (xray:PutTraceSegments, xray:PutTelemetryRecords): ' +
          'these actions support no resource-level permissions. Table, secret and log permissions are exact ARNs.',
      });
      Validations.of(fn).acknowledge({
        id: 'AwsSolutions-L1',
        reason: 'Node.js 22 is the runtime the project targets and tests (engines, esbuild target node22).',
      });
      functions[name] = fn;
      logGroups[name] = logGroup;
    }
    this.functions = functions as Record<FunctionName, NodejsFunction>;
    this.logGroups = logGroups as Record<FunctionName, logs.LogGroup>;

    this.stateMachine = this.createStateMachine(config);
    for (const [name, spec] of Object.entries(FUNCTIONS) as [FunctionName, FunctionSpec][]) {
      if (!spec.startsDelivery) continue;
      this.functions[name].addEnvironment('STATE_MACHINE_ARN', this.stateMachine.stateMachineArn);
      this.functions[name].addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['states:StartExecution'],
          resources: [this.stateMachine.stateMachineArn],
        }),
      );
    }
    this.createSweeperSchedule();
    [this.webhookQueue, this.webhookDeadLetterQueue] = this.createWebhookDelivery();

    this.api = this.createApi(config);
    this.createAlarms(config);

    new CfnOutput(this, 'ApiUrl', {
      description: "Base URL of the API (the spec's {base_url}); append /v2/Services/...",
      value: this.api.apiEndpoint,
    });
    new CfnOutput(this, 'TableName', { value: this.table.tableName, description: 'The DynamoDB table' });
    new CfnOutput(this, 'StateMachineArn', {
      value: this.stateMachine.stateMachineArn,
      description: 'The delivery workflow (Express)',
    });
    new CfnOutput(this, 'CarrierKeySecretArn', {
      value: this.keySecrets.carrier.secretArn,
      description:
        'Secrets Manager secret from which the carrier token and receipt-signing key are derived (configure the carrier)',
    });
    new CfnOutput(this, 'WebhookKeySecretArn', {
      value: this.keySecrets.webhook.secretArn,
      description: 'Secrets Manager secret holding the key that seals webhook secrets (admin --secret-arn)',
    });
    new CfnOutput(this, 'WebhookDeadLetterQueueUrl', {
      value: this.webhookDeadLetterQueue.queueUrl,
      description:
        'Webhook deliveries whose retries ran out, and batches the webhook functions could not process',
    });
  }

  /**
   * The key secret of one group, generated by Secrets Manager at deploy time: the value never appears in the
   * template or in any environment variable; the functions of the group get only the ARN and read the value at
   * cold start. Retained like the table: the table keeps webhook secrets sealed with the webhook key (and codes
   * in flight), which no other key opens.
   *
   * The construct ids and generation options are pinned by a template test: a new logical id or a changed
   * GenerateSecretString makes CloudFormation replace the secret, that is, silently generate a new key.
   */
  private createKeySecret(group: KeyGroup): secretsmanager.Secret {
    const { id, description } = KEY_SECRETS[group];
    const secret = new secretsmanager.Secret(this, id, {
      description: `OTP service ${description} (JSON {"purpose": "${group}", "${KEY_SECRET_FIELD}": ...})`,
      generateSecretString: {
        // The purpose inside the value lets a reader check it was given the right secret.
        secretStringTemplate: JSON.stringify({ purpose: group }),
        generateStringKey: KEY_SECRET_FIELD,
        passwordLength: 64,
        excludePunctuation: true,
      },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'A key root, not a credential for another system: automatic rotation would invalidate what it protects ' +
        '(codes in flight, the carrier configuration, sealed webhook secrets). Rotate deliberately (docs/deploy.md).',
    });
    return secret;
  }

  /**
   * Webhooks: the table's stream feeds the events function (verification items only, filtered before any
   * invocation), which queues one job per event and endpoint; the sender consumes the queue. Retries are new
   * messages delayed by the schedule (docs/webhooks.md), so the queue's own redrive only catches jobs the
   * sender kept failing on; both end in the dead-letter queue, which has an alarm.
   */
  private createWebhookDelivery(): [sqs.Queue, sqs.Queue] {
    const { webhookEvents, webhookSender } = this.functions;
    const deadLetters = new sqs.Queue(this, 'WebhookDeadLetterQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const queue = new sqs.Queue(this, 'WebhookQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Six times the sender's timeout, as Lambda advises for SQS event sources.
      visibilityTimeout: Duration.seconds(FUNCTIONS.webhookSender.timeout.toSeconds() * 6),
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: WEBHOOK_MAX_RECEIVES },
    });

    webhookEvents.addEventSource(
      new DynamoEventSource(this.table, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: 100,
        // A failing batch is split to isolate the bad record, retried, then reported to the dead-letter queue.
        bisectBatchOnError: true,
        retryAttempts: 10,
        onFailure: new SqsDlq(deadLetters),
        // Only verifications can make events; API-key counters, number logs and ledger lines never reach it.
        filters: [
          lambda.FilterCriteria.filter({
            dynamodb: { NewImage: { type: { S: lambda.FilterRule.isEqual('verification') } } },
          }),
        ],
      }),
    );
    webhookEvents.addEnvironment('WEBHOOK_QUEUE_URL', queue.queueUrl);
    webhookEvents.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [queue.queueArn] }),
    );
    Validations.of(webhookEvents.role!).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'X-Ray (xray:PutTraceSegments, xray:PutTelemetryRecords) and dynamodb:ListStreams, which the DynamoDB ' +
        'event source needs and which has no resource-level permissions; reading the stream is on its ARN only.',
    });

    webhookSender.addEventSource(new SqsEventSource(queue, { batchSize: 10, reportBatchItemFailures: true }));
    // The sender re-queues its own retries, and the 15-minute hops of longer waits, to the queue it consumes:
    // Lambda's recursive loop detection (default Terminate) would stop one failing job's chain at about the 17th
    // invocation, some 3 hours in, before attempts 8 and 9. The loop is intended and bounded by the job: at most
    // 9 attempts and 128 invocations over about 30 hours (docs/webhooks.md, "Retries and Lambda's loop detection").
    (webhookSender.node.defaultChild as lambda.CfnFunction).recursiveLoop = lambda.RecursiveLoop.ALLOW;
    webhookSender.addEnvironment('WEBHOOK_QUEUE_URL', queue.queueUrl);
    webhookSender.addEnvironment('WEBHOOK_DEAD_LETTER_QUEUE_URL', deadLetters.queueUrl);
    // Retries are re-enqueued; deliveries whose retries ran out go to the dead-letter queue.
    webhookSender.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['sqs:SendMessage'],
        resources: [queue.queueArn, deadLetters.queueArn],
      }),
    );
    return [queue, deadLetters];
  }

  /**
   * The outbox drain: the sweeper runs every minute. A failed run is not retried by Lambda (the next run, a
   * minute later, does the same work), so retries cannot pile up into overlapping runs.
   */
  private createSweeperSchedule(): void {
    const sweeper = this.functions.sweeper;
    sweeper.configureAsyncInvoke({ retryAttempts: 0 });
    new events.Rule(this, 'SweeperSchedule', {
      description: 'Runs the stalled-delivery sweeper every minute',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      // A run that could not be handed over within the minute is superseded by the next one.
      targets: [new targets.LambdaFunction(sweeper, { maxEventAge: Duration.minutes(1), retryAttempts: 2 })],
    });
  }

  /**
   * The delivery workflow from the ASL file shared with the local stack. Express: a verification spends most of
   * its life in Wait states, which Express bills as duration instead of per state transition (see docs).
   */
  private createStateMachine(config: OtpConfig): sfn.StateMachine {
    const { deliver, afterWait } = this.functions;
    const logGroup = new logs.LogGroup(this, 'DeliveryLogs', {
      // The vendedlogs prefix keeps the CloudWatch Logs resource policy that Step Functions writes small.
      logGroupName: `/aws/vendedlogs/states/${this.stackName}-Delivery`,
      retention: config.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const stateMachine = new sfn.StateMachine(this, 'Delivery', {
      stateMachineType: sfn.StateMachineType.EXPRESS,
      definitionBody: sfn.DefinitionBody.fromFile(path.join(ROOT, 'statemachine/delivery.asl.json')),
      definitionSubstitutions: {
        DeliverFunctionArn: deliver.functionArn,
        AfterWaitFunctionArn: afterWait.functionArn,
      },
      // ALL events for debugging, but never the execution data: history must not hold anything sensitive.
      // ERROR, not ALL: every execution's state transitions would cost about $3.50 per million verifications
      // in log ingestion; the delivery outcome is on the record and in the task logs anyway.
      logs: { destination: logGroup, level: sfn.LogLevel.ERROR, includeExecutionData: false },
      tracingEnabled: true,
    });
    // The ASL calls the unqualified function ARNs directly, so exactly those two ARNs (no versions, no `:*`).
    stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [deliver.functionArn, afterWait.functionArn],
      }),
    );
    Validations.of(stateMachine).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Only the statements Step Functions requires on "*": log delivery (logs:CreateLogDelivery, ' +
        'logs:PutResourcePolicy, ...) and X-Ray tracing; neither supports resource-level permissions. ' +
        'lambda:InvokeFunction is limited to the two task function ARNs.',
    });
    Validations.of(stateMachine).acknowledge({
      id: 'AwsSolutions-SF1',
      reason:
        'Execution logs at ERROR, not ALL: ALL would log every state transition of every verification (about ' +
        '$3.50 per million in ingestion, more than the Lambda bill); outcomes are on the record, in the task ' +
        'logs (delivery.ended) and in X-Ray traces.',
    });
    return stateMachine;
  }

  private createApi(config: OtpConfig): HttpApi {
    const api = new HttpApi(this, 'Api', {
      description: 'Phone verification (OTP) API',
      // The stage is created below so that it can carry throttling and access logs.
      createDefaultStage: false,
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: config.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const stage = new HttpStage(this, 'ApiDefaultStage', {
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
    this.separateReceipts(config, stage);
    for (const route of ROUTES) {
      const fn = this.functions[route.fn];
      api.addRoutes({
        path: route.path,
        methods: [route.method],
        // Payload format 2.0, as the handlers (and the local stack's HTTP server) expect.
        integration: new HttpLambdaIntegration(`${FUNCTIONS[route.fn].id}Integration`, fn),
      });
    }
    // The handlers authenticate every request themselves (X-API-Key looked up by hash in the table, or the
    // provider's receipt signature), so API Gateway has no authorizer.
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'Authorization is done in the handlers: X-API-Key (spec part 5) checked against the table by hash, and ' +
        'receipts by the provider signature. An API Gateway authorizer would add a second lookup per request.',
    });
    return api;
  }

  /**
   * Receipts must not wait behind the public API: a receipt that comes late makes the workflow pay for the next
   * channel. The receipt route gets its own throttling (RouteSettings override the stage's default route
   * settings for that route key; HttpStage has no property for it), so its limit is set for the carrier's
   * receipt rate alone, whatever the API's.
   *
   * Lambda concurrency is the other shared pool: a flood of sends, checks or junk-key requests can use the
   * account's whole unreserved concurrency, and receipts then get throttled too. Reserving concurrency for the
   * receipt function closes that, but it is off by default: a reservation leaves the account's other functions
   * at least 100 unreserved, so on an account whose limit is still the new-account 10 (or any limit under
   * 100 + N) the deploy fails. With a normal limit (1,000) set `otp:receiptReservedConcurrency`: a receipt takes
   * tens of milliseconds, so 10 carries several hundred receipts a second. It is also a ceiling: receipts
   * beyond it are throttled (the carrier retries them).
   */
  private separateReceipts(config: OtpConfig, stage: HttpStage): void {
    const receipt = ROUTES.find((route) => route.fn === 'receipt')!;
    (stage.node.defaultChild as CfnStage).routeSettings = {
      [`${receipt.method} ${receipt.path}`]: {
        ThrottlingRateLimit: config.receiptThrottleRateLimit,
        ThrottlingBurstLimit: config.receiptThrottleBurstLimit,
      },
    };
    if (config.receiptReservedConcurrency !== undefined) {
      (this.functions.receipt.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions =
        config.receiptReservedConcurrency;
    }
  }

  private createAlarms(config: OtpConfig): void {
    const topic = config.alarmTopicArn
      ? sns.Topic.fromTopicArn(this, 'AlarmTopic', config.alarmTopicArn)
      : undefined;
    const alarmOn = (id: string, metric: cloudwatch.IMetric, description: string): void => {
      const alarm = new cloudwatch.Alarm(this, id, {
        metric,
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      if (topic) alarm.addAlarmAction(new SnsAction(topic));
    };
    const period = Duration.minutes(5);

    alarmOn(
      'Api5xxAlarm',
      this.api.metricServerError({ period, statistic: cloudwatch.Stats.SUM }),
      'The HTTP API answered 5xx (a handler crashed or timed out, or not_priceable).',
    );
    for (const [name, fn] of Object.entries(this.functions) as [FunctionName, NodejsFunction][]) {
      alarmOn(
        `${FUNCTIONS[name].id}ErrorsAlarm`,
        fn.metricErrors({ period, statistic: cloudwatch.Stats.SUM }),
        `The ${FUNCTIONS[name].id} function threw (see its log group).`,
      );
    }
    alarmOn(
      'WebhookDeadLettersAlarm',
      this.webhookDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period,
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      'Webhook deliveries ran out of retries, or a webhook batch could not be processed (see the dead-letter queue).',
    );
    alarmOn(
      'DeliveryExecutionsFailedAlarm',
      this.stateMachine.metricFailed({ period, statistic: cloudwatch.Stats.SUM }),
      'A delivery workflow execution failed: a task kept failing after its retries.',
    );
    alarmOn(
      'DeliveryExecutionsTimedOutAlarm',
      this.stateMachine.metricTimedOut({ period, statistic: cloudwatch.Stats.SUM }),
      'A delivery workflow execution hit the Express five-minute limit: its delivery may be left PENDING.',
    );

    // FAILED deliveries are a business outcome, not an error: count them from the tasks' structured logs.
    const namespace = `OtpVerify/${this.stackName}`;
    const metricName = 'DeliveriesFailed';
    // The sweeper logs the same line for each overdue delivery it settles.
    for (const name of ['deliver', 'afterWait', 'sweeper'] as const) {
      new logs.MetricFilter(this, `${FUNCTIONS[name].id}FailedDeliveriesFilter`, {
        logGroup: this.logGroups[name],
        filterPattern: logs.FilterPattern.literal(FAILED_DELIVERY_PATTERN),
        metricNamespace: namespace,
        metricName,
        metricValue: '1',
      });
    }
    alarmOn(
      'FailedDeliveriesAlarm',
      new cloudwatch.Metric({ namespace, metricName, period, statistic: cloudwatch.Stats.SUM }),
      'A verification ended with delivery_status FAILED: every channel failed for that number.',
    );
  }
}
