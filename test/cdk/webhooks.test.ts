/**
 * The webhook resources of the CDK stack: the table's stream, the events function's stream event source, the
 * queue and its dead-letter queue, the sender's SQS event source, exact IAM and the alarm. Synthesized once
 * without bundling: bundles and cdk-nag (over the whole app) are checked in otp-stack.test.ts.
 */
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { TABLE_SCHEMA } from '../../functions/adapters/dynamodb/keys';
import type { OtpStack } from '../../lib/otp-stack';
import { logicalIdIn, synthUnbundled, type Resources } from '../support/cdk';

let stack: OtpStack;
let template: Template;
let resources: Resources;
let cleanup: () => void;

beforeAll(() => {
  ({ stack, template, resources, cleanup } = synthUnbundled());
}, 60_000);
afterAll(() => cleanup());

const logicalId = (construct: IConstruct): string => logicalIdIn(stack, construct);
const getAtt = (id: string, attribute = 'Arn') => ({ 'Fn::GetAtt': [id, attribute] });
const ref = (id: string) => ({ Ref: id });
const ids = () => ({
  table: logicalId(stack.table),
  queue: logicalId(stack.webhookQueue),
  deadLetters: logicalId(stack.webhookDeadLetterQueue),
  events: logicalId(stack.functions.webhookEvents),
  sender: logicalId(stack.functions.webhookSender),
});

/** Every statement of a role's inline policies: actions sorted, one entry per resource, its condition if any. */
function statementsOf(roleId: string): { actions: string[]; resource: unknown; condition?: unknown }[] {
  const out: { actions: string[]; resource: unknown; condition?: unknown }[] = [];
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    if (
      !(resource.Properties.Roles as unknown[]).some(
        (role) => JSON.stringify(role) === JSON.stringify(ref(roleId)),
      )
    )
      continue;
    const document = resource.Properties.PolicyDocument as {
      Statement: { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[];
    };
    for (const statement of document.Statement) {
      expect(statement.Effect).toBe('Allow');
      for (const target of [statement.Resource].flat()) {
        out.push({
          actions: [statement.Action].flat().sort(),
          resource: target,
          ...(statement.Condition ? { condition: statement.Condition } : {}),
        });
      }
    }
  }
  return out.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}
/** The table's condition: only items whose partition key starts with one of the prefixes. */
const leadingKeys = (...prefixes: string[]) => ({
  'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': prefixes },
});
const sorted = (statements: { actions: string[]; resource: unknown; condition?: unknown }[]) =>
  statements
    .map((s) => ({ ...s, actions: [...s.actions].sort() }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

test('the table has a stream with old and new images (the outbox the events are read from)', () => {
  expect(TABLE_SCHEMA.streamViewType).toBe('NEW_AND_OLD_IMAGES');
  template.hasResourceProperties('AWS::DynamoDB::Table', {
    StreamSpecification: { StreamViewType: TABLE_SCHEMA.streamViewType },
  });
});

test('the events function reads the stream: flagged verifications and guard alerts only, bisect on error, retries, then the DLQ', () => {
  const { table, deadLetters, events } = ids();
  const mappings = Object.values(resources).filter(
    (r) =>
      r.Type === 'AWS::Lambda::EventSourceMapping' &&
      JSON.stringify(r.Properties.FunctionName) === JSON.stringify(ref(events)),
  );
  expect(mappings).toHaveLength(1);
  expect(mappings[0]!.Properties).toEqual({
    FunctionName: ref(events),
    EventSourceArn: getAtt(table, 'StreamArn'),
    StartingPosition: 'TRIM_HORIZON',
    BatchSize: 100,
    BisectBatchOnFunctionError: true,
    MaximumRetryAttempts: 10,
    DestinationConfig: { OnFailure: { Destination: getAtt(deadLetters) } },
    FilterCriteria: {
      Filters: [
        // A verification sent while its service had a webhook endpoint: no other reaches the function.
        {
          Pattern: JSON.stringify({
            dynamodb: { NewImage: { type: { S: ['verification'] }, webhooks: { BOOL: [true] } } },
          }),
        },
        // A guard country state that carries an alert (guard.cap_reached, guard.conversion_drop), no other
        // guard write.
        {
          Pattern: JSON.stringify({
            dynamodb: {
              NewImage: {
                type: { S: ['guard_state'] },
                cap_reached: { M: { service_sid: { S: [{ exists: true }] } } },
              },
            },
          }),
        },
        {
          Pattern: JSON.stringify({
            dynamodb: {
              NewImage: {
                type: { S: ['guard_state'] },
                conversion_drop: { M: { service_sid: { S: [{ exists: true }] } } },
              },
            },
          }),
        },
      ],
    },
  });
});

test('the sender consumes the queue in batches of 10, reporting the jobs that failed', () => {
  const { queue, sender } = ids();
  template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
    FunctionName: ref(sender),
    EventSourceArn: getAtt(queue),
    BatchSize: 10,
    FunctionResponseTypes: ['ReportBatchItemFailures'],
    // Endpoints that never answer delay webhooks, and take no more of the account's concurrency than this.
    ScalingConfig: { MaximumConcurrency: 100 },
  });
  // The events function and the sender, plus the pumping guard's own consumer of the stream.
  template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
    FunctionName: ref(logicalId(stack.functions.guardSignals)),
    EventSourceArn: getAtt(ids().table, 'StreamArn'),
    BisectBatchOnFunctionError: true,
    // The window names each batch's shard (the consumer's per-shard marks); one batch of a shard at a time.
    TumblingWindowInSeconds: 900,
    ParallelizationFactor: Match.absent(),
    // Every verification, and a number's log holding a refusal: `exists` on the guard map's `mode`, a leaf (on the
    // map itself it would never match, and no refusal would reach the consumer).
    FilterCriteria: {
      Filters: [
        { Pattern: JSON.stringify({ dynamodb: { NewImage: { type: { S: ['verification'] } } } }) },
        {
          Pattern: JSON.stringify({
            dynamodb: { NewImage: { guard: { M: { mode: { S: [{ exists: true }] } } } } },
          }),
        },
      ],
    },
  });
  template.resourceCountIs('AWS::Lambda::EventSourceMapping', 3);
});

test('the ceiling on sender instances is set from context', () => {
  const custom = synthUnbundled({ 'otp:webhookSenderMaxConcurrency': '400' });
  try {
    custom.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: ref(logicalIdIn(custom.stack, custom.stack.functions.webhookSender)),
      ScalingConfig: { MaximumConcurrency: 400 },
    });
  } finally {
    custom.cleanup();
  }
});

test("the sender alone may loop through its own queue (retries); every other function keeps Lambda's loop detection", () => {
  const { sender } = ids();
  // Its retries and 15-minute hops re-enter through the queue it consumes: up to 128 invocations per job over
  // about 30 hours, which Lambda's default (Terminate) would cut at about 16 (docs/webhooks.md).
  expect(resources[sender]!.Properties.RecursiveLoop).toBe('Allow');
  const others = Object.entries(resources).filter(
    ([id, resource]) => resource.Type === 'AWS::Lambda::Function' && id !== sender,
  );
  expect(others.length).toBeGreaterThanOrEqual(8);
  for (const [id, resource] of others) {
    // Absent is Lambda's default, Terminate: no other function is meant to invoke itself.
    expect([id, resource.Properties.RecursiveLoop ?? 'Terminate']).toEqual([id, 'Terminate']);
  }
});

test('queue and dead-letter queue: encrypted, TLS only, redrive after 5 receives, visibility 6 × the sender timeout', () => {
  const { queue, deadLetters } = ids();
  // The third is the guard consumer's on-failure queue (lib/constructs/guard-signals.ts).
  template.resourceCountIs('AWS::SQS::Queue', 3);
  expect(resources[queue]!.Properties).toEqual({
    SqsManagedSseEnabled: true,
    VisibilityTimeout: 180,
    RedrivePolicy: { deadLetterTargetArn: getAtt(deadLetters), maxReceiveCount: 5 },
  });
  expect(resources[deadLetters]!.Properties).toEqual({
    SqsManagedSseEnabled: true,
    MessageRetentionPeriod: 14 * 86400,
  });
  for (const id of [queue, deadLetters]) {
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [ref(id)],
      PolicyDocument: {
        Statement: [
          {
            Action: 'sqs:*',
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            Resource: getAtt(id),
          },
        ],
      },
    });
  }
});

test('events function IAM: Query under services, read the stream, send to the queue (and failures to the DLQ); no key', () => {
  const { table, queue, deadLetters } = ids();
  expect(statementsOf(logicalId(stack.functions.webhookEvents.role!))).toEqual(
    sorted([
      {
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resource: getAtt(logicalId(stack.logGroups.webhookEvents)),
      },
      // ListStreams has no resource-level permission.
      { actions: ['dynamodb:ListStreams'], resource: '*' },
      // Endpoints live under their service: Query nothing but SERVICE# partitions.
      { actions: ['dynamodb:Query'], resource: getAtt(table), condition: leadingKeys('SERVICE#*') },
      {
        actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
        resource: getAtt(table, 'StreamArn'),
      },
      { actions: ['sqs:SendMessage'], resource: getAtt(queue) },
      // The event source's on-failure destination.
      {
        actions: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'],
        resource: getAtt(deadLetters),
      },
    ]),
  );
});

test('sender IAM: read endpoints, record attempts, write expiry, the webhook key, consume the queue, send to queue and DLQ', () => {
  const { table, queue, deadLetters } = ids();
  expect(statementsOf(logicalId(stack.functions.webhookSender.role!))).toEqual(
    sorted([
      {
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resource: getAtt(logicalId(stack.logGroups.webhookSender)),
      },
      // GetItem only under services (the endpoint), PutItem only in the delivery records' own family (so no
      // service item can be written), UpdateItem only on verifications (the expiry write-back).
      { actions: ['dynamodb:GetItem'], resource: getAtt(table), condition: leadingKeys('SERVICE#*') },
      {
        actions: ['dynamodb:PutItem'],
        resource: getAtt(table),
        condition: leadingKeys('WEBHOOKDELIVERY#*'),
      },
      { actions: ['dynamodb:UpdateItem'], resource: getAtt(table), condition: leadingKeys('VERIFICATION#*') },
      // The webhook key secret only: not the code or carrier keys.
      { actions: ['secretsmanager:GetSecretValue'], resource: ref(logicalId(stack.keySecrets.webhook)) },
      {
        actions: [
          'sqs:ChangeMessageVisibility',
          'sqs:DeleteMessage',
          'sqs:GetQueueAttributes',
          'sqs:GetQueueUrl',
          'sqs:ReceiveMessage',
        ],
        resource: getAtt(queue),
      },
      { actions: ['sqs:SendMessage'], resource: getAtt(queue) },
      { actions: ['sqs:SendMessage'], resource: getAtt(deadLetters) },
    ]),
  );
});

test('no other role may use the queues or the stream', () => {
  const { queue, deadLetters, table } = ids();
  const webhookRoles = new Set([
    logicalId(stack.functions.webhookEvents.role!),
    logicalId(stack.functions.webhookSender.role!),
  ]);
  // The pumping guard reads the stream too (its signals), but never the webhook queues.
  const streamRoles = new Set([...webhookRoles, logicalId(stack.functions.guardSignals.role!)]);
  const targets = [
    { allowed: webhookRoles, arns: [getAtt(queue), getAtt(deadLetters)] },
    { allowed: streamRoles, arns: [getAtt(table, 'StreamArn')] },
  ];
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = (resource.Properties.Roles as { Ref: string }[]).map((role) => role.Ref);
    const document = JSON.stringify(resource.Properties.PolicyDocument);
    for (const { allowed, arns } of targets) {
      if (roles.every((role) => allowed.has(role))) continue;
      expect(arns.filter((arn) => document.includes(JSON.stringify(arn)))).toEqual([]);
    }
  }
});

test('the functions learn the queue URLs from their environment', () => {
  const { queue, deadLetters, events, sender } = ids();
  const variables = (id: string) =>
    (resources[id]!.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
  expect(variables(events).WEBHOOK_QUEUE_URL).toEqual(ref(queue));
  expect(variables(events).WEBHOOK_DEAD_LETTER_QUEUE_URL).toBeUndefined();
  expect(variables(sender)).toMatchObject({
    WEBHOOK_QUEUE_URL: ref(queue),
    WEBHOOK_DEAD_LETTER_QUEUE_URL: ref(deadLetters),
  });
  // Private targets are never allowed on AWS.
  expect(variables(sender).OTP_WEBHOOK_ALLOW_PRIVATE).toBeUndefined();
});

test('alarms: dead letters, and errors of both functions', () => {
  const { deadLetters, events, sender } = ids();
  template.hasResourceProperties('AWS::CloudWatch::Alarm', {
    Namespace: 'AWS/SQS',
    MetricName: 'ApproximateNumberOfMessagesVisible',
    Dimensions: [{ Name: 'QueueName', Value: getAtt(deadLetters, 'QueueName') }],
    Statistic: 'Maximum',
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: 0,
  });
  for (const id of [events, sender]) {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: ref(id) }],
    });
  }
  template.hasOutput('WebhookDeadLetterQueueUrl', { Value: ref(deadLetters) });
});
