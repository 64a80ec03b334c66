/**
 * The CloudWatch dashboard of the stack (lib/constructs/dashboard.ts): its widgets read the metrics the code
 * writes (names, namespace and dimensions imported from functions/core/metrics.ts, never copied), conversion
 * as verified / accepted, the functions' errors and durations, the workflow's failed and timed-out executions,
 * the dead-letter queue, and every alarm. Synthesized once without bundling.
 */
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { METRIC, METRICS_NAMESPACE, SERVICE_DIMENSION, type MetricName } from '../../functions/core/metrics';
import { CHANNELS } from '../../functions/core/routing';
import { FUNCTION_NAMES } from '../../lib/functions';
import type { OtpStack } from '../../lib/otp-stack';
import { logicalIdIn, synthUnbundled } from '../support/cdk';

interface Widget {
  type: string;
  properties: {
    title?: string;
    alarms?: string[];
    metrics?: unknown[][];
  };
}

let stack: OtpStack;
let template: Template;
let cleanup: () => void;
let widgets: Widget[];

/** The dashboard body with each reference written `<Ref:id>` or `<GetAtt:id.attr>`, parsed. */
function dashboardBody(): { widgets: Widget[] } {
  const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
  expect(dashboards).toHaveLength(1);
  const body = (dashboards[0]!.Properties as { DashboardBody: unknown }).DashboardBody as
    string | { 'Fn::Join': [string, unknown[]] };
  const parts = typeof body === 'string' ? [body] : body['Fn::Join'][1];
  const text = parts
    .map((part) => {
      if (typeof part === 'string') return part;
      const token = part as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
      if (token.Ref) return `<Ref:${token.Ref}>`;
      if (token['Fn::GetAtt']) return `<GetAtt:${token['Fn::GetAtt'].join('.')}>`;
      return JSON.stringify(part).replace(/"/g, "'");
    })
    .join('');
  return JSON.parse(text) as { widgets: Widget[] };
}

beforeAll(() => {
  ({ stack, template, cleanup } = synthUnbundled());
  widgets = dashboardBody().widgets;
}, 60_000);
afterAll(() => cleanup());

const logicalId = (construct: IConstruct): string => logicalIdIn(stack, construct);

/** Every metric line of every graph: `[namespace, name, dim, value, ..., options?]` or `[{expression, ...}]`. */
const lines = () => widgets.flatMap((widget) => widget.properties.metrics ?? []);
const metricLines = () => lines().filter((line) => typeof line[0] === 'string') as (string | object)[][];
const expressions = () =>
  lines().flatMap((line) =>
    typeof line[0] === 'object' && line[0] !== null && 'expression' in line[0]
      ? [(line[0] as { expression: string }).expression]
      : [],
  );
/** The graphed lines of a metric of the service, with exactly these dimensions besides `service`. */
const serviceLines = (name: MetricName, dimensions: Record<string, string> = {}) =>
  metricLines().filter((line) => {
    if (line[0] !== METRICS_NAMESPACE || line[1] !== name) return false;
    const dims = line.slice(2).filter((part) => typeof part === 'string') as string[];
    const expected = { [SERVICE_DIMENSION]: stack.stackName, ...dimensions };
    const pairs: Record<string, string> = {};
    for (let i = 0; i + 1 < dims.length; i += 2) pairs[dims[i]!] = dims[i + 1]!;
    return JSON.stringify(Object.entries(pairs).sort()) === JSON.stringify(Object.entries(expected).sort());
  });
const serviceLine = (name: MetricName, dimensions: Record<string, string> = {}) =>
  serviceLines(name, dimensions)[0];
/** A SEARCH over every value of the dimensions, of this stack's metric `name`. */
const searchOf = (name: MetricName, dimensions: string[]) =>
  expressions().find(
    (expression) =>
      expression.startsWith('SEARCH(') &&
      expression.includes(`{${METRICS_NAMESPACE},${[SERVICE_DIMENSION, ...dimensions].join(',')}}`) &&
      expression.includes(`MetricName="${name}"`) &&
      expression.includes(`${SERVICE_DIMENSION}="${stack.stackName}"`),
  );

describe('dashboard', () => {
  test('one dashboard, named after the stack', () => {
    template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: stack.stackName });
  });

  test('sends accepted, and refused by error code', () => {
    expect(serviceLine(METRIC.sendsAccepted)).toBeDefined();
    expect(searchOf(METRIC.sendsRefused, ['code'])).toBeDefined();
  });

  test('conversion is verified checks / accepted sends, as a math expression', () => {
    const conversion = lines().find(
      (line) => typeof line[0] === 'object' && (line[0] as { expression?: string }).expression?.includes('/'),
    );
    expect((conversion?.[0] as { expression: string }).expression).toBe('100 * verified / accepted');
    // The expression's ids name exactly these metrics (a metric may be graphed elsewhere too, without an id).
    const ids = (name: MetricName, dimensions: Record<string, string>) =>
      serviceLines(name, dimensions).map((line) => (line.at(-1) as { id?: string }).id);
    expect(ids(METRIC.checks, { outcome: 'verified' })).toContain('verified');
    expect(ids(METRIC.sendsAccepted, {})).toContain('accepted');
  });

  test('checks by outcome, deliveries by channel and outcome, fallbacks, webhook failures', () => {
    expect(searchOf(METRIC.checks, ['outcome'])).toBeDefined();
    expect(searchOf(METRIC.deliveries, ['channel', 'outcome'])).toBeDefined();
    expect(searchOf(METRIC.fallbacks, ['channel'])).toBeDefined();
    expect(searchOf(METRIC.webhookFailures, ['outcome'])).toBeDefined();
  });

  test('receipt latency per channel (p90), deliveries ended and the failed-delivery metric', () => {
    for (const channel of CHANNELS) {
      const line = serviceLine(METRIC.receiptLatency, { channel });
      expect(line?.at(-1)).toMatchObject({ stat: 'p90' });
    }
    expect(serviceLine(METRIC.deliveriesEnded, { status: 'FAILED' })).toBeDefined();
    expect(serviceLine(METRIC.deliveriesFailed)).toBeDefined();
  });

  test('errors and p90 duration of every function', () => {
    for (const name of FUNCTION_NAMES) {
      const fn = `<Ref:${logicalId(stack.functions[name])}>`;
      for (const metricName of ['Errors', 'Duration']) {
        expect(
          metricLines().some((line) => line[0] === 'AWS/Lambda' && line[1] === metricName && line[3] === fn),
        ).toBe(true);
      }
    }
  });

  test("the workflow's failed and timed-out executions, the dead-letter queue's depth", () => {
    const machine = `<Ref:${logicalId(stack.stateMachine)}>`;
    for (const metricName of ['ExecutionsFailed', 'ExecutionsTimedOut']) {
      expect(
        metricLines().some(
          (line) => line[0] === 'AWS/States' && line[1] === metricName && line[3] === machine,
        ),
      ).toBe(true);
    }
    const dlq = `<GetAtt:${logicalId(stack.webhookDeadLetterQueue)}.QueueName>`;
    expect(
      metricLines().some(
        (line) =>
          line[0] === 'AWS/SQS' && line[1] === 'ApproximateNumberOfMessagesVisible' && line[3] === dlq,
      ),
    ).toBe(true);
  });

  test("the guard: blocks by reason and level, caps reached by cap, the consumer's failures", () => {
    expect(searchOf(METRIC.guardBlocks, ['level', 'reason'])).toBeDefined();
    expect(searchOf(METRIC.guardCapsReached, ['cap'])).toBeDefined();
    expect(serviceLine(METRIC.guardBatchFailures)).toBeDefined();
    expect(serviceLine(METRIC.guardItemsOverBudget)).toBeDefined();
  });

  test('every alarm of the stack is on the dashboard', () => {
    const alarmIds = Object.keys(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarmIds.length).toBeGreaterThan(10);
    const shown = widgets.flatMap((widget) => widget.properties.alarms ?? []);
    expect(shown.sort()).toEqual(alarmIds.map((id) => `<GetAtt:${id}.Arn>`).sort());
  });
});
