import * as path from 'node:path';
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { PARTITION_FAMILY, TABLE_SCHEMA } from '../../functions/adapters/dynamodb/keys';
import { RECEIPT_FAILED_ATTRIBUTE } from '../../functions/core/delivery-time';
import { verificationKeySubstitutions } from '../delivery-definition';
import { FUNCTIONS, FUNCTION_NAMES, type FunctionName } from '../functions';
import { Grouping } from './logical-ids';

const ASL_FILE = path.join(__dirname, '..', '..', 'statemachine', 'delivery.asl.json');

export interface DeliveryWorkflowProps {
  functions: Record<FunctionName, NodejsFunction>;
  /** The table the state machine reads a verification's delivery status from (its own GetItem). */
  table: dynamodb.ITable;
  logRetention: logs.RetentionDays;
  /** X-Ray tracing of the executions (`otp:tracing`). */
  tracing: boolean;
}

/**
 * The delivery workflow from the ASL file shared with the local stack, its log group, the right to start it for
 * the functions whose manifest entry says `startsDelivery`, and the sweeper's schedule. Express: a verification
 * spends most of its life in Wait states, which Express bills as duration instead of per state transition.
 */
export class DeliveryWorkflow extends Grouping {
  readonly stateMachine: sfn.StateMachine;

  constructor(scope: Construct, id: string, props: DeliveryWorkflowProps) {
    super(scope, id);
    const { deliver, afterWait } = props.functions;
    const logGroup = new logs.LogGroup(this, 'DeliveryLogs', {
      // The vendedlogs prefix keeps the CloudWatch Logs resource policy that Step Functions writes small.
      logGroupName: `/aws/vendedlogs/states/${Stack.of(this).stackName}-Delivery`,
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const stateMachine = (this.stateMachine = new sfn.StateMachine(this, 'Delivery', {
      stateMachineType: sfn.StateMachineType.EXPRESS,
      definitionBody: sfn.DefinitionBody.fromFile(ASL_FILE),
      definitionSubstitutions: {
        DeliverFunctionArn: deliver.functionArn,
        AfterWaitFunctionArn: afterWait.functionArn,
        TableName: props.table.tableName,
        ...verificationKeySubstitutions(),
      },
      // ERROR, not ALL: every execution's state transitions would be billed as log ingestion (docs/deploy.md,
      // "Design choices"); the delivery outcome is on the record and in the task logs anyway. Never the
      // execution data: history must not hold anything sensitive.
      logs: { destination: logGroup, level: sfn.LogLevel.ERROR, includeExecutionData: false },
      tracingEnabled: props.tracing,
    }));
    if (!props.tracing)
      Validations.of(stateMachine).acknowledge({
        id: 'AwsSolutions-SF2',
        reason:
          'X-Ray is opt-in (otp:tracing, docs/adr/0024): sampled as Lambda samples, traces would cost more than ' +
          'the rest of the bill at a few verifications a second; logs, metrics and alarms cover operations.',
      });
    // The ASL calls the unqualified function ARNs directly, so exactly those two ARNs (no versions, no `:*`).
    stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [deliver.functionArn, afterWait.functionArn],
      }),
    );
    // The receipt wait's status reads (ReadDeliveryStatus, arn:aws:states:::dynamodb:getItem): GetItem only,
    // on verification items only, and only their delivery_status (the key attributes name the item).
    stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:GetItem'],
        resources: [props.table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${PARTITION_FAMILY.verification}*`] },
          'ForAllValues:StringEquals': {
            'dynamodb:Attributes': [
              TABLE_SCHEMA.partitionKey,
              TABLE_SCHEMA.sortKey,
              'delivery_status',
              RECEIPT_FAILED_ATTRIBUTE,
            ],
          },
          StringEqualsIfExists: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' },
        },
      }),
    );
    Validations.of(stateMachine).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Only the statements Step Functions requires on "*": log delivery (logs:CreateLogDelivery, ' +
        'logs:PutResourcePolicy, ...) and X-Ray tracing (with otp:tracing); neither supports resource-level ' +
        'permissions. ' +
        'lambda:InvokeFunction is limited to the two task function ARNs.',
    });
    Validations.of(stateMachine).acknowledge({
      id: 'AwsSolutions-SF1',
      reason:
        'Execution logs at ERROR, not ALL: ALL would log every state transition of every verification (about ' +
        '$3.50 per million in ingestion, more than the Lambda bill); outcomes are on the record, in the task ' +
        'logs (delivery.ended) and in X-Ray traces.',
    });

    for (const name of FUNCTION_NAMES.filter((name) => FUNCTIONS[name].startsDelivery)) {
      props.functions[name].addEnvironment('STATE_MACHINE_ARN', stateMachine.stateMachineArn);
      props.functions[name].addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['states:StartExecution'],
          resources: [stateMachine.stateMachineArn],
        }),
      );
    }

    // The sweeper runs every minute, walking the ledger from its cursor. A failed run is not retried by Lambda
    // (the next run, a minute later, starts where the failed one stopped), so retries cannot pile up into
    // overlapping runs; nor can throttled runs, which Lambda would otherwise keep trying for 6 hours.
    const sweeper = props.functions.sweeper;
    sweeper.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
    new events.Rule(this, 'SweeperSchedule', {
      description: 'Runs the stalled-delivery sweeper every minute',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      // A run that could not be handed over within the minute is superseded by the next one.
      targets: [new targets.LambdaFunction(sweeper, { maxEventAge: Duration.minutes(1), retryAttempts: 2 })],
    });
  }
}
