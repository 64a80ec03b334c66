import * as path from 'node:path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import {
  LogLevel as EsbuildLogLevel,
  NodejsFunction,
  OutputFormat,
  type ICommandHooks,
} from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { PARTITION_FAMILY } from '../../functions/adapters/dynamodb/keys';
import { KEY_GROUPS, type KeyGroup } from '../../functions/adapters/keyring';
import { BUNDLING, type FunctionSpec } from '../functions';
import { Grouping } from './logical-ids';

/** Repository root: function entries and the lock file are found from here. */
const ROOT = path.join(__dirname, '..', '..');

export interface OtpFunctionProps {
  /** The function's manifest entry (lib/functions.ts). */
  spec: FunctionSpec;
  table: dynamodb.ITable;
  keySecrets: Record<KeyGroup, secretsmanager.ISecret>;
  /** What every function gets: table name, settings, channels, ... */
  environment: Record<string, string>;
  logRetention: logs.RetentionDays;
  /** X-Ray active tracing (`otp:tracing`); off: no trace and no X-Ray grant. */
  tracing: boolean;
  /** The providers the deployment uses (lib/provider-config.ts): grants `onlyWithProvider` one of them apply. */
  providersInUse?: readonly string[];
  /** Files to add beside the bundle (the console's pages: lib/constructs/console.ts). */
  commandHooks?: ICommandHooks;
}

/**
 * One function of the manifest: its log group, an execution role that writes to that log group only, and the
 * NodejsFunction built from the manifest's entry and bundling, with exactly the table, index and key-secret
 * grants the manifest lists. The constructs that wire a function to something else (the workflow, the webhook
 * queues) add those grants from the same manifest entry.
 */
export class OtpFunction extends Grouping {
  readonly function: NodejsFunction;
  readonly logGroup: logs.LogGroup;
  readonly role: iam.Role;

  constructor(scope: Construct, props: OtpFunctionProps) {
    const { spec } = props;
    super(scope, spec.id);
    this.logGroup = new logs.LogGroup(this, `${spec.id}Logs`, {
      retention: props.logRetention,
      // Logs go with the stack; the data that matters is in the retained table.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // An explicit role instead of AWSLambdaBasicExecutionRole: writes to this function's log group only.
    this.role = new iam.Role(this, `${spec.id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of the ${spec.id} function`,
    });
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );

    const fn = (this.function = new NodejsFunction(this, `${spec.id}Function`, {
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
      timeout: Duration.seconds(spec.timeoutSeconds),
      role: this.role,
      logGroup: this.logGroup,
      tracing: props.tracing ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
      environment: {
        ...props.environment,
        // The ARNs of its own key secrets only; the values are read at cold start (functions/wiring/keys.ts).
        ...Object.fromEntries(
          spec.keys.map((group) => [KEY_GROUPS[group].env, props.keySecrets[group].secretArn]),
        ),
      },
      bundling: {
        minify: BUNDLING.minify,
        sourceMap: BUNDLING.sourceMap,
        sourcesContent: BUNDLING.sourcesContent,
        target: BUNDLING.target,
        format: OutputFormat.CJS,
        mainFields: [...BUNDLING.mainFields],
        bundleAwsSDK: BUNDLING.bundleAwsSDK,
        externalModules: [...BUNDLING.externalModules],
        forceDockerBundling: false,
        logLevel: EsbuildLogLevel.ERROR,
        ...(props.commandHooks && { commandHooks: props.commandHooks }),
      },
    }));
    for (const grant of spec.table) {
      if (grant.onlyWithProvider && !props.providersInUse?.includes(grant.onlyWithProvider)) continue;
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: grant.actions,
          resources: [props.table.tableArn],
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
    if (spec.keys.length > 0) {
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['secretsmanager:GetSecretValue'],
          resources: spec.keys.map((group) => props.keySecrets[group].secretArn),
        }),
      );
    }
    if (spec.keys.length > 1) {
      // Two or more key secrets are read in one request (functions/wiring/keys.ts). The batch action has no
      // resource-level permission; Secrets Manager still checks GetSecretValue on each secret (the statement
      // above), so what the function may read is unchanged.
      fn.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['secretsmanager:BatchGetSecretValue'], resources: ['*'] }),
      );
    }
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Only the X-Ray statement added by active tracing, with otp:tracing (xray:PutTraceSegments, ' +
        'xray:PutTelemetryRecords) and, ' +
        'for a function with two key secrets, secretsmanager:BatchGetSecretValue: these actions support no ' +
        'resource-level permissions (the batch still needs GetSecretValue on each secret, granted by exact ARN). ' +
        'Table, secret and log permissions are exact ARNs.',
    });
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason: 'Node.js 22 is the runtime the project targets and tests (engines, esbuild target node22).',
    });
  }
}
