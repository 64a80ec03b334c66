/**
 * The delivery state machine's status read: Step Functions' own DynamoDB GetItem during the
 * receipt wait. Its role may GetItem on the table only, verification items only, delivery_status only; the key
 * it builds is the one keys.ts builds. Synthesized without bundling: bundles and cdk-nag (over the whole app)
 * are checked in otp-stack.test.ts.
 */
import type { IConstruct } from 'constructs';
import { keys, PARTITION_FAMILY } from '../../functions/adapters/dynamodb/keys';
import { verificationKeySubstitutions } from '../../lib/delivery-definition';
import type { OtpStack } from '../../lib/otp-stack';
import { logicalIdIn, synthUnbundled, type Resources } from '../support/cdk';
import { loadDefinition } from '../../local/workflow';

let stack: OtpStack;
let resources: Resources;
let cleanup: () => void;

beforeAll(() => {
  ({ stack, resources, cleanup } = synthUnbundled());
}, 60_000);
afterAll(() => cleanup());

const logicalId = (construct: IConstruct): string => logicalIdIn(stack, construct);

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

/** The statements of the state machine role's inline policies. */
function stateMachineStatements(): Statement[] {
  const machine = resources[logicalId(stack.stateMachine)]!;
  const roleId = (machine.Properties.RoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return Object.values(resources)
    .filter(
      (resource) =>
        resource.Type === 'AWS::IAM::Policy' &&
        (resource.Properties.Roles as unknown[]).some(
          (role) => JSON.stringify(role) === `{"Ref":"${roleId}"}`,
        ),
    )
    .flatMap((resource) => (resource.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

test('the state machine may GetItem verification items on the table, their delivery_status and receipt_failed only', () => {
  const onTable = stateMachineStatements().filter(
    (statement) =>
      JSON.stringify(statement.Resource) ===
      JSON.stringify({ 'Fn::GetAtt': [logicalId(stack.table), 'Arn'] }),
  );
  expect(onTable).toEqual([
    {
      Effect: 'Allow',
      Action: 'dynamodb:GetItem',
      Resource: { 'Fn::GetAtt': [logicalId(stack.table), 'Arn'] },
      Condition: {
        'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${PARTITION_FAMILY.verification}*`] },
        'ForAllValues:StringEquals': {
          'dynamodb:Attributes': ['pk', 'sk', 'delivery_status', 'receipt_failed'],
        },
        StringEqualsIfExists: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' },
      },
    },
  ]);
  // Nothing else of DynamoDB, anywhere: no index, no other action.
  const dynamo = stateMachineStatements().filter((statement) =>
    [statement.Action].flat().some((action) => action.startsWith('dynamodb:')),
  );
  expect(dynamo).toEqual(onTable);
});

test('the status read asks for what the role allows, with the key keys.ts builds', () => {
  const definition = loadDefinition({
    DeliverFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:deliver',
    AfterWaitFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:after-wait',
    TableName: 'OtpVerify-Table',
    ...verificationKeySubstitutions(),
  }) as { States: Record<string, { Resource?: string; Parameters?: Record<string, unknown> }> };
  const read = definition.States.ReadDeliveryStatus!;
  expect(read.Resource).toBe('arn:aws:states:::dynamodb:getItem');
  const parameters = read.Parameters as {
    Key: { pk: { 'S.$': string }; sk: { S: string } };
    ProjectionExpression: string;
    ConsistentRead: boolean;
  };
  expect(parameters.ProjectionExpression).toBe('delivery_status, receipt_failed');
  expect(parameters.ConsistentRead).toBe(false);
  // States.Format('<template>', $.sid) with the SID in place of {}: the key keys.ts builds.
  const template = /^States\.Format\('(.*)', \$\.sid\)$/.exec(parameters.Key.pk['S.$'])![1]!;
  const sid = 'VE0123456789abcdef0123456789abcdef';
  expect({ pk: template.replace('{}', sid), sk: parameters.Key.sk.S }).toEqual(keys.verification(sid));
});
