/**
 * Every alarm of the stack can fire. CloudWatch matches an alarm to a metric by namespace, name and its whole
 * dimension set (names and values): an alarm one dimension off what is published stays OK forever, and nothing
 * local shows it. So the alarms of the synthesized template (with the example providers and a receipt
 * reservation: every alarm the stack can have) are checked against what is published:
 * - on the functions' own metrics, against the EMF documents the code paths that count them print (the EMF
 *   adapter over Powertools Metrics, built in the counting function's environment from the template), each
 *   document also checked against the embedded metric format's rules;
 * - on AWS's metrics, against the names and dimensions AWS documents for the service, each dimension naming a
 *   resource of the stack of the right type.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { verificationToItem } from '../../functions/adapters/dynamodb/items';
import {
  handleGuardStream,
  reportConversionDrop,
  reportOverBudget,
} from '../../functions/adapters/guard/stream';
import type { Logger } from '../../functions/adapters/logger';
import { MemoryGuardStore } from '../../functions/adapters/memory/guard';
import { EmfMetrics } from '../../functions/adapters/metrics';
import { awsProviderError } from '../../functions/adapters/providers/aws-errors';
import { deliverOverChannel, type DeliveryTaskOutput } from '../../functions/core/delivery';
import { METRIC, METRICS_NAMESPACE } from '../../functions/core/metrics';
import type { FunctionName } from '../../lib/functions';
import { PROVIDER_CONTEXT_KEYS } from '../../lib/provider-config';
import { logicalIdIn, synthUnbundled, type Resources } from '../support/cdk';
import { coreWorld } from '../support/core-world';
import {
  emfProblems,
  flushedEmf,
  publishedMetrics,
  type EmfDocument,
  type PublishedMetric,
} from '../support/emf';
import { pendingSmsVerification, streamRecord } from '../support/stream-records';

const ROOT = path.join(__dirname, '..', '..');
const EXAMPLE_PROVIDERS = path.join(ROOT, 'providers.example.json');

interface AlarmProperties {
  Namespace?: string;
  MetricName?: string;
  Dimensions?: { Name: string; Value: unknown }[];
  Unit?: string;
  Statistic?: string;
  Metrics?: unknown;
}

let built: ReturnType<typeof synthUnbundled>;
let alarms: [string, AlarmProperties][];
/** Every EMF document the code paths below printed, and the metrics CloudWatch would extract from them. */
let documents: EmfDocument[] = [];
let published: PublishedMetric[] = [];

const silent: Logger = { log: () => undefined };

/** The EMF writer of `fn` as Lambda builds it: in the environment the template gives that function. */
function emfOf(fn: FunctionName): EmfMetrics {
  const { stack, resources } = built;
  const variables = (
    resources[logicalIdIn(stack, stack.functions[fn])]!.Properties as {
      Environment: { Variables: Record<string, unknown> };
    }
  ).Environment.Variables;
  const saved = { ...process.env };
  for (const [name, value] of Object.entries(variables))
    if (typeof value === 'string') process.env[name] = value;
  try {
    return new EmfMetrics();
  } finally {
    process.env = saved;
  }
}

/**
 * Sends whose every channel fails with one AWS error, each delivered by the deliver task to its end: the
 * provider errors by code (mapped as the AWS adapters map them) and the failed deliveries.
 */
async function failedDeliveries(): Promise<EmfDocument[]> {
  const metrics = emfOf('deliver');
  const errors = [
    { name: 'ConflictException', Reason: 'DESTINATION_PHONE_NUMBER_NOT_VERIFIED', message: 'not verified' },
    { name: 'AccessDeniedException', message: 'not authorized to perform: sms-voice:SendTextMessage' },
    { name: 'ValidationException', Reason: 'PRICE_OVER_THRESHOLD', message: 'over MaxPrice' },
    {
      name: 'ServiceQuotaExceededException',
      Reason: 'MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT',
      message: 'spend limit',
    },
  ];
  for (const error of errors) {
    const world = coreWorld();
    const service = world.addService();
    world.provider.send = () => Promise.reject(awsProviderError(error));
    const { sid } = (await world.send({ serviceSid: service.sid })).verification;
    let output: DeliveryTaskOutput = { sid, channelIndex: 0, waitSeconds: 8, next: 'deliver' };
    while (output.next === 'deliver')
      output = await deliverOverChannel({ ...world.deliveryDeps, metrics }, { ...output });
    expect(output).toMatchObject({ next: 'end', deliveryStatus: 'FAILED' });
  }
  return flushedEmf<EmfDocument>(metrics);
}

/** The guard's consumer: a batch it fails (its store unreachable), an item over budget, a conversion drop. */
async function guardConsumer(): Promise<EmfDocument[]> {
  const metrics = emfOf('guardSignals');
  class Unreachable extends MemoryGuardStore {
    override load(): never {
      throw new Error('DynamoDB unreachable');
    }
  }
  const verification = pendingSmsVerification;
  await expect(
    handleGuardStream(
      { store: new Unreachable(), clock: { now: () => new Date(verification.dateCreated) } },
      { Records: [streamRecord('INSERT', verificationToItem(verification))] },
      { metrics, logger: silent },
    ),
  ).rejects.toThrow('DynamoDB unreachable');
  // What the consumer's entry hands the guard store and the consumer core (functions/entries/guardSignals.ts).
  reportOverBudget(silent, metrics)({ pk: 'GUARD#x', sk: 'STATS#GB', kind: 'stats', bytes: 70_000 });
  reportConversionDrop(silent, metrics)(verification.serviceSid, 'GB', { sends_60m: 40, checked_60m: 2 });
  return flushedEmf<EmfDocument>(metrics);
}

beforeAll(async () => {
  // Providers and a receipt reservation: the alarms that come only with them are there too.
  built = synthUnbundled({
    [PROVIDER_CONTEXT_KEYS.providersFile]: EXAMPLE_PROVIDERS,
    'otp:receiptReservedConcurrency': '10',
  });
  alarms = Object.entries(built.resources)
    .filter(([, resource]) => resource.Type === 'AWS::CloudWatch::Alarm')
    .map(([id, resource]) => [id, resource.Properties as AlarmProperties]);
  documents = [...(await failedDeliveries()), ...(await guardConsumer())];
  published = publishedMetrics(documents);
}, 60_000);
afterAll(() => built.cleanup());

const dimensionsOf = (alarm: AlarmProperties) =>
  Object.fromEntries((alarm.Dimensions ?? []).map(({ Name, Value }) => [Name, Value]));
const sameDimensions = (a: Record<string, unknown>, b: Record<string, unknown>) =>
  JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

test('every alarm reads one metric (no math expression), on a namespace this file knows', () => {
  expect(alarms.length).toBeGreaterThan(20);
  for (const [id, alarm] of alarms) {
    expect([id, alarm.Metrics]).toEqual([id, undefined]);
    expect([id, [METRICS_NAMESPACE, ...Object.keys(VENDED)].includes(alarm.Namespace!)]).toEqual([id, true]);
  }
});

test("every EMF document the counting code prints follows the embedded metric format's rules", () => {
  expect(documents.length).toBeGreaterThan(0);
  for (const document of documents) expect([document, emfProblems(document)]).toEqual([document, []]);
});

test('the format check refuses what CloudWatch would not extract', () => {
  const now = Date.now();
  const valid: EmfDocument = {
    _aws: {
      Timestamp: now,
      CloudWatchMetrics: [
        { Namespace: 'N', Dimensions: [['service']], Metrics: [{ Name: 'Sends', Unit: 'Count' }] },
      ],
    },
    service: 'S',
    Sends: 1,
  };
  const [directive] = valid._aws.CloudWatchMetrics;
  const broken = (change: (document: EmfDocument) => void) => {
    const document = structuredClone(valid);
    change(document);
    return emfProblems(document, now);
  };
  expect(emfProblems(valid, now)).toEqual([]);
  // Seconds, not milliseconds.
  expect(broken((d) => (d._aws.Timestamp = Math.floor(now / 1000)))).toHaveLength(1);
  expect(broken((d) => (d.service = 7))).toHaveLength(1);
  expect(broken((d) => delete d.service)).toHaveLength(1);
  const keys = Array.from({ length: 31 }, (_, i) => `d${i}`);
  expect(
    broken((d) => {
      d._aws.CloudWatchMetrics[0]!.Dimensions = [keys];
      for (const key of keys) d[key] = 'v';
    }),
  ).toHaveLength(1);
  expect(
    broken((d) => {
      d._aws.CloudWatchMetrics[0]!.Metrics = Array.from({ length: 101 }, () => directive!.Metrics[0]!);
    }),
  ).toHaveLength(1);
  expect(broken((d) => (d.Sends = Array.from({ length: 101 }, () => 1)))).toHaveLength(1);
  expect(broken((d) => (d.Sends = '1'))).toHaveLength(1);
  expect(broken((d) => (d._aws.CloudWatchMetrics[0]!.Metrics[0]!.Unit = 'Millisecond'))).toHaveLength(1);
});

test("every alarm on the functions' metrics reads a metric their code publishes: name, dimensions, unit", () => {
  const own = alarms.filter(([, alarm]) => alarm.Namespace === METRICS_NAMESPACE);
  // The four provider-error alarms come with providers: the synth above has them.
  expect(own.length).toBeGreaterThanOrEqual(8);
  const silentAlarms = own.flatMap(([id, alarm]) => {
    const match = published.some(
      (metric) =>
        metric.namespace === alarm.Namespace &&
        metric.name === alarm.MetricName &&
        sameDimensions(metric.dimensions, dimensionsOf(alarm)) &&
        (alarm.Unit === undefined || alarm.Unit === metric.unit),
    );
    if (match) return [];
    const near = published.filter((metric) => metric.name === alarm.MetricName);
    return [{ id, reads: { name: alarm.MetricName, dimensions: dimensionsOf(alarm) }, published: near }];
  });
  expect(silentAlarms).toEqual([]);
});

/**
 * AWS's metrics the alarms read, as each service documents them for CloudWatch (namespace, metric names, the
 * dimension), and what the dimension's value must be in the template: the resource it names, by type.
 */
const VENDED: Record<
  string,
  { metrics: string[]; dimension: string; value: (resources: Resources, v: unknown) => boolean }
> = {
  // Lambda: "Types of metrics for Lambda functions", dimension FunctionName (Ref of a function is its name).
  'AWS/Lambda': {
    metrics: ['Errors', 'Throttles', 'IteratorAge'],
    dimension: 'FunctionName',
    value: (resources, v) => refTo(resources, v, 'AWS::Lambda::Function'),
  },
  // SQS: "Available CloudWatch metrics for Amazon SQS", dimension QueueName.
  'AWS/SQS': {
    metrics: ['ApproximateNumberOfMessagesVisible', 'ApproximateAgeOfOldestMessage'],
    dimension: 'QueueName',
    value: (resources, v) => attOf(resources, v, 'AWS::SQS::Queue', 'QueueName'),
  },
  // Step Functions: execution metrics, dimension StateMachineArn (Ref of a state machine is its ARN).
  'AWS/States': {
    metrics: ['ExecutionsFailed', 'ExecutionsTimedOut'],
    dimension: 'StateMachineArn',
    value: (resources, v) => refTo(resources, v, 'AWS::StepFunctions::StateMachine'),
  },
  // API Gateway HTTP APIs: 4xx / 5xx (not a REST API's 4XXError / 5XXError), dimension ApiId (not ApiName).
  'AWS/ApiGateway': {
    metrics: ['4xx', '5xx'],
    dimension: 'ApiId',
    value: (resources, v) =>
      refTo(resources, v, 'AWS::ApiGatewayV2::Api') &&
      resources[(v as { Ref: string }).Ref]!.Properties.ProtocolType === 'HTTP',
  },
};
const refTo = (resources: Resources, value: unknown, type: string) => {
  const ref = (value as { Ref?: unknown } | undefined)?.Ref;
  return typeof ref === 'string' && resources[ref]?.Type === type;
};
const attOf = (resources: Resources, value: unknown, type: string, attribute: string) => {
  const att = (value as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'];
  return att !== undefined && resources[att[0]]?.Type === type && att[1] === attribute;
};

test("every alarm on an AWS service's metric reads a documented metric, dimension and resource", () => {
  const wrong = alarms.flatMap(([id, alarm]) => {
    const documented = VENDED[alarm.Namespace!];
    if (!documented) return [];
    const [dimension, ...more] = alarm.Dimensions ?? [];
    const ok =
      documented.metrics.includes(alarm.MetricName!) &&
      more.length === 0 &&
      dimension?.Name === documented.dimension &&
      documented.value(built.resources, dimension.Value);
    return ok ? [] : [{ id, alarm }];
  });
  expect(wrong).toEqual([]);
});

test('docs/operations.md says what each alarm means and what to do, and lists every metric', () => {
  const operations = readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
  const whatToDo = operations.slice(operations.indexOf('## The alarms and what to do'));
  const undocumented = alarms.flatMap(([logicalId, alarm]) => {
    const name = logicalId.replace(/[0-9A-F]{8}$/, '');
    // A function's errors alarm has the entry `<Function>ErrorsAlarm`, one for them all.
    const generic = alarm.Namespace === 'AWS/Lambda' && alarm.MetricName === 'Errors';
    return whatToDo.includes(generic ? '`<Function>ErrorsAlarm`' : `\`${name}\``) ? [] : [name];
  });
  expect(undocumented).toEqual([]);
  const table = operations.slice(
    operations.indexOf('## The metrics'),
    operations.indexOf('## What to watch'),
  );
  expect(Object.values(METRIC).filter((name) => !table.includes(`| \`${name}\``))).toEqual([]);
});
