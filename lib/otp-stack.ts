import { CfnOutput, RemovalPolicy, Stack, type CfnElement, type StackProps, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { TABLE_SCHEMA } from '../functions/adapters/dynamodb/keys';
import { KEY_GROUP_NAMES, KEY_SECRET_FIELD, type KeyGroup } from '../functions/adapters/keyring';
import { OtpAlarms } from './constructs/alarms';
import { DeliveryWorkflow } from './constructs/delivery-workflow';
import { GuardSignals } from './constructs/guard-signals';
import { groupedLogicalId } from './constructs/logical-ids';
import { CONSOLE_BUNDLING_HOOKS, OtpConsole } from './constructs/console';
import { OtpApi } from './constructs/otp-api';
import { OtpEdge } from './constructs/edge';
import { OtpFunction } from './constructs/otp-function';
import { Providers } from './constructs/providers';
import { WebhookDelivery } from './constructs/webhook-delivery';
import { OtpDashboard } from './constructs/dashboard';
import { observabilityEnvironment } from './constructs/service-metrics';
import { readConfig, settingsEnvironment, type OtpConfig } from './config';
import { FUNCTIONS, FUNCTION_NAMES, type FunctionName } from './functions';

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
  apiKeyTag: {
    id: 'ApiKeyTagKey',
    description:
      'API key tag key (checked by the API, used to issue keys); replacing it refuses every key issued',
  },
};

/**
 * The whole service: the stateful resources (the table, the key secrets) at the stack level, one OtpFunction per
 * function of the manifest (lib/functions.ts), and the constructs that wire them: OtpApi, DeliveryWorkflow,
 * WebhookDelivery, OtpAlarms (lib/constructs/). Those constructs group code, not addresses: every resource keeps
 * the logical id it would have in the stack itself (lib/constructs/logical-ids.ts).
 */
export class OtpStack extends Stack {
  readonly config: OtpConfig;
  readonly table: dynamodb.Table;
  /** One generated secret per key group (functions/adapters/keyring.ts), read by the functions of its purposes. */
  readonly keySecrets: Record<KeyGroup, secretsmanager.Secret>;
  readonly functions: Record<FunctionName, NodejsFunction>;
  readonly logGroups: Record<FunctionName, logs.LogGroup>;
  readonly stateMachine: sfn.StateMachine;
  readonly api: HttpApi;
  /** The receipt callbacks' own URL (`otp:receiptFunctionUrl`); undefined: they come through the HTTP API. */
  readonly receiptUrl: lambda.FunctionUrl | undefined;
  /** CloudFront and AWS WAF in front of the API (`otp:edge`, lib/constructs/edge.ts); undefined without. */
  readonly edge: OtpEdge | undefined;
  /** The console's sign-in: user pool, app client, JWT authorizer (lib/constructs/console.ts). */
  readonly console: OtpConsole;
  readonly webhookQueue: sqs.Queue;
  readonly webhookDeadLetterQueue: sqs.Queue;
  /** The guard consumer's batches dropped after their retries (lib/constructs/guard-signals.ts). */
  readonly guardDroppedBatches: sqs.Queue;
  /** The real delivery providers' resources, when the deployment configures some (lib/constructs/providers.ts). */
  readonly providers?: Providers;

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

    this.keySecrets = Object.fromEntries(
      KEY_GROUP_NAMES.map((group) => [group, this.createKeySecret(group)]),
    ) as Record<KeyGroup, secretsmanager.Secret>;

    const environment: Record<string, string> = {
      TABLE_NAME: this.table.tableName,
      OTP_ALLOWED_CHANNELS: config.allowedChannels.join(','),
      ...settingsEnvironment(config.settings),
      ...(config.carrierUrl ? { OTP_CARRIER_URL: config.carrierUrl } : {}),
      // The provider of each channel (lib/provider-config.ts); unset: every channel on http-carrier.
      ...(config.providers ? { OTP_PROVIDERS: config.providers.json } : {}),
      // The operator's cut-off for API keys of the legacy format (docs/admin.md); unset: they keep working.
      ...(config.legacyApiKeysUntil ? { OTP_LEGACY_API_KEYS_UNTIL: config.legacyApiKeysUntil } : {}),
      // No NODE_OPTIONS=--enable-source-maps: Node would read and index each bundle's source map at every cold
      // start. The logger maps a logged error's stack from the map beside the bundle instead, when one is logged
      // (functions/adapters/stack-map.ts).
      ...observabilityEnvironment(this.stackName),
    };
    const built = Object.fromEntries(
      FUNCTION_NAMES.map((name) => [
        name,
        new OtpFunction(this, {
          spec: FUNCTIONS[name],
          table: this.table,
          keySecrets: this.keySecrets,
          environment,
          logRetention: config.logRetention,
          tracing: config.tracing,
          providersInUse: config.providers?.inUse,
          ...(name === 'console' && { commandHooks: CONSOLE_BUNDLING_HOOKS }),
        }),
      ]),
    ) as Record<FunctionName, OtpFunction>;
    this.functions = mapValues(built, (fn) => fn.function);
    this.logGroups = mapValues(built, (fn) => fn.logGroup);
    if (config.providers) {
      this.providers = new Providers(this, 'Providers', {
        providers: config.providers,
        functions: this.functions,
        table: this.table,
        keySecrets: this.keySecrets,
        environment,
        logRetention: config.logRetention,
        tracing: config.tracing,
      });
    }

    this.stateMachine = new DeliveryWorkflow(this, 'DeliveryWorkflow', {
      functions: this.functions,
      table: this.table,
      logRetention: config.logRetention,
      tracing: config.tracing,
    }).stateMachine;
    const webhooks = new WebhookDelivery(this, 'WebhookDelivery', {
      table: this.table,
      functions: this.functions,
      senderMaxConcurrency: config.webhookSenderMaxConcurrency,
    });
    this.webhookQueue = webhooks.queue;
    const guardSignals = new GuardSignals(this, 'GuardSignalsStream', {
      table: this.table,
      consumer: this.functions.guardSignals,
    });
    this.webhookDeadLetterQueue = webhooks.deadLetterQueue;
    this.guardDroppedBatches = guardSignals.droppedBatches;
    let signIn: OtpConsole | undefined;
    const publicApi = new OtpApi(this, 'OtpApi', {
      config,
      functions: this.functions,
      authorizers: (api) => {
        signIn = new OtpConsole(this, 'ConsoleSignIn', { api, consoleFunction: this.functions.console });
        return { console: signIn.authorizer };
      },
    });
    this.api = publicApi.api;
    this.receiptUrl = publicApi.receiptUrl;
    this.console = signIn!;
    if (config.edge) {
      this.edge = new OtpEdge(this, 'Edge', { api: this.api, edge: config.edge });
      this.console.addOrigin(this.edge.url);
    }
    const alarms = new OtpAlarms(this, 'OtpAlarms', {
      alarmTopicArn: config.alarmTopicArn,
      stackName: this.stackName,
      api: this.api,
      functions: this.functions,
      logGroups: this.logGroups,
      stateMachine: this.stateMachine,
      webhookDeadLetterQueue: this.webhookDeadLetterQueue,
      guardDroppedBatches: this.guardDroppedBatches,
      receiptFunctions: this.providers?.receiptLambdas,
      failedReceiptQueue: this.providers?.failedReceiptQueue,
      receiptReservedConcurrency: config.receiptReservedConcurrency,
      realProviders: this.providers !== undefined,
    });
    new OtpDashboard(this, 'Dashboard', {
      service: this,
      alarms: alarms.alarms,
      receiptFunctions: this.providers?.receiptLambdas,
    });

    new CfnOutput(this, 'ApiUrl', {
      description: "The API's base URL (no trailing slash): append /v2/Services/...",
      value: this.api.apiEndpoint,
    });
    if (this.receiptUrl) {
      new CfnOutput(this, 'ReceiptUrl', {
        description:
          'Base URL of the receipt callbacks (otp:receiptFunctionUrl); a provider posts to <ReceiptUrl>v2/Callbacks/<provider>',
        value: this.receiptUrl.url,
      });
    }
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
    new CfnOutput(this, 'ApiKeyTagSecretArn', {
      value: this.keySecrets.apiKeyTag.secretArn,
      description: 'Secrets Manager secret holding the key that tags API keys (needed to issue keys)',
    });
    new CfnOutput(this, 'WebhookDeadLetterQueueUrl', {
      value: this.webhookDeadLetterQueue.queueUrl,
      description:
        'Webhook deliveries whose retries ran out, and batches the webhook functions could not process',
    });
  }

  /** Logical ids as if every resource were created in the stack itself (lib/constructs/logical-ids.ts). */
  protected override allocateLogicalId(element: CfnElement): string {
    return groupedLogicalId(element);
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
}

function mapValues<K extends string, A, B>(record: Record<K, A>, fn: (value: A) => B): Record<K, B> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value as A)])) as Record<
    K,
    B
  >;
}
