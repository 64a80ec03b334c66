/**
 * The simulator's IAM (local/iam.ts) against IAM's documented evaluation (an explicit Deny wins, otherwise an
 * Allow must match the action and every resource; `*` and `?` wildcards; action names case-insensitive) and the
 * Service Authorization Reference's ARN formats for the resources a request names.
 */
import {
  authorize,
  roleStatements,
  sendTextMessageResources,
  whatsAppPhoneNumberResource,
  type IamStatement,
} from '../../local/iam';

const scope = { partition: 'aws', region: 'eu-west-1', account: '111122223333' };
const arn = (resource: string) => `arn:aws:sms-voice:eu-west-1:111122223333:${resource}`;

test('SendTextMessage names its origination identity, configuration set and protect configuration', () => {
  expect(
    sendTextMessageResources(scope, {
      OriginationIdentity: 'pool-abc',
      ConfigurationSetName: 'otp-events',
      ProtectConfigurationId: 'protect-xyz',
    }),
  ).toEqual([
    arn('pool/pool-abc'),
    arn('configuration-set/otp-events'),
    arn('protect-configuration/protect-xyz'),
  ]);
  expect(sendTextMessageResources(scope, { OriginationIdentity: 'phone-number-123' })).toEqual([
    arn('phone-number/phone-number-123'),
  ]);
  expect(sendTextMessageResources(scope, { OriginationIdentity: 'ACME', DestinationCountry: 'IN' })).toEqual([
    arn('sender-id/ACME/IN'),
  ]);
  // An ARN is its own resource.
  expect(
    sendTextMessageResources(scope, {
      OriginationIdentity: 'arn:aws:sms-voice:us-east-1:444455556666:pool/pool-1',
      ConfigurationSetName: 'arn:aws:sms-voice:us-east-1:444455556666:configuration-set/x',
    }),
  ).toEqual([
    'arn:aws:sms-voice:us-east-1:444455556666:pool/pool-1',
    'arn:aws:sms-voice:us-east-1:444455556666:configuration-set/x',
  ]);
});

test("a WhatsApp phone number id's ARN drops the phone-number-id- prefix", () => {
  expect(whatsAppPhoneNumberResource(scope, 'phone-number-id-0123abcd')).toBe(
    'arn:aws:social-messaging:eu-west-1:111122223333:phone-number-id/0123abcd',
  );
});

test('IAM evaluation: every resource needs an Allow, a Deny wins, wildcards, case-insensitive actions', () => {
  const statements: IamStatement[] = [
    {
      effect: 'Allow',
      actions: ['SMS-Voice:SendText*'],
      resources: [arn('pool/*'), arn('configuration-set/otp-?')],
    },
  ];
  expect(
    authorize(statements, 'sms-voice:SendTextMessage', [arn('pool/p1'), arn('configuration-set/otp-1')]),
  ).toEqual({
    allowed: true,
  });
  expect(
    authorize(statements, 'sms-voice:SendTextMessage', [arn('pool/p1'), arn('configuration-set/otp-12')]),
  ).toEqual({
    allowed: false,
    resource: arn('configuration-set/otp-12'),
  });
  expect(authorize(statements, 'sms-voice:SendMediaMessage', [arn('pool/p1')]).allowed).toBe(false);
  expect(
    authorize(
      [...statements, { effect: 'Deny', actions: ['*'], resources: [arn('pool/p1')] }],
      'sms-voice:SendTextMessage',
      [arn('pool/p1')],
    ).allowed,
  ).toBe(false);
  // A resource pattern is case-sensitive.
  expect(authorize(statements, 'sms-voice:SendTextMessage', [arn('POOL/p1')]).allowed).toBe(false);
});

test("a role's statements come from the template's policies attached to it, pseudo parameters resolved", () => {
  const template = {
    Resources: {
      Mine: {
        Type: 'AWS::IAM::Policy',
        Properties: {
          Roles: [{ Ref: 'DeliverRole' }],
          PolicyDocument: {
            Statement: [
              {
                Effect: 'Allow',
                Action: 'sms-voice:SendTextMessage',
                Resource: {
                  'Fn::Join': [
                    '',
                    [
                      'arn:',
                      { Ref: 'AWS::Partition' },
                      ':sms-voice:eu-west-1:',
                      { Ref: 'AWS::AccountId' },
                      ':pool/p1',
                    ],
                  ],
                },
              },
            ],
          },
        },
      },
      Other: {
        Type: 'AWS::IAM::Policy',
        Properties: {
          Roles: [{ Ref: 'OtherRole' }],
          PolicyDocument: { Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] },
        },
      },
    },
  };
  expect(roleStatements(template, 'DeliverRole', scope)).toEqual([
    { effect: 'Allow', actions: ['sms-voice:SendTextMessage'], resources: [arn('pool/p1')] },
  ]);
});
