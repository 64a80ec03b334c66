/**
 * The stack with the example provider configuration (providers.example.json, `npm run synth:providers`): the
 * SNS receipt function invoked by the provider-events topic only (and no EventBridge rule), send
 * permissions on the configured ARNs alone, the Vonage secret readable by deliver and receipt alone, cdk-nag
 * clean; and the synth-time validation of the provider settings. Bundling is skipped (the bundle test builds the
 * receipt functions' bundles).
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { type CfnElement, Validations } from 'aws-cdk-lib';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { IConstruct } from 'constructs';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { FUNCTION_NAMES, PROVIDER_FUNCTIONS, PROVIDER_FUNCTION_NAMES } from '../../lib/functions';
import { PROVIDER_CONTEXT_KEYS as K, metaApiVersionProblem } from '../../lib/provider-config';
import { DEFAULT_META_API_VERSION } from '../../functions/adapters/providers/whatsapp-template';
import { OtpStack } from '../../lib/otp-stack';
import { CDK_CONTEXT, testApp } from '../support/cdk';

const ROOT = path.join(__dirname, '..', '..');
const EXAMPLE_FILE = path.join(ROOT, 'providers.example.json');
const EXAMPLE = JSON.parse(readFileSync(EXAMPLE_FILE, 'utf8')) as Record<string, unknown>;

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
interface Statement {
  Action: string | string[];
  Resource: unknown;
  Effect: string;
}

function synth(context: Record<string, unknown>) {
  const app = testApp({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new OtpStack(app, 'OtpVerify');
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const template = Template.fromStack(stack);
  return { app, stack, template, resources: (template.toJSON() as { Resources: Resources }).Resources };
}

const actionsOf = (statement: Statement) =>
  Array.isArray(statement.Action) ? statement.Action : [statement.Action];

/** Every statement of every IAM policy, with the logical id of the role it is attached to. */
function statements(resources: Resources): { role: string; statement: Statement }[] {
  return Object.values(resources)
    .filter((resource) => resource.Type === 'AWS::IAM::Policy')
    .flatMap((policy) => {
      const roles = policy.Properties.Roles as { Ref: string }[];
      const document = policy.Properties.PolicyDocument as { Statement: Statement[] };
      return roles.flatMap(({ Ref }) => document.Statement.map((statement) => ({ role: Ref, statement })));
    });
}

describe('the example provider configuration', () => {
  let built: ReturnType<typeof synth>;
  beforeAll(() => {
    built = synth({ [K.providersFile]: EXAMPLE_FILE });
  });
  /** The logical id of a construct's CloudFormation resource. */
  const id = (construct: IConstruct) =>
    built.stack.resolve((construct.node.defaultChild as CfnElement).logicalId) as string;
  const roleOf = (fn: NodejsFunction) => id(fn.role!);

  test('every function reads OTP_PROVIDERS as the file gives it', () => {
    const expected = JSON.stringify(EXAMPLE[K.providers]);
    const functions = built.template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions)).toHaveLength(FUNCTION_NAMES.length + PROVIDER_FUNCTION_NAMES.length);
    for (const fn of Object.values(functions)) {
      const env = (fn.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment
        .Variables;
      expect(env.OTP_PROVIDERS).toBe(expected);
    }
  });

  test('the SNS receipt function is invoked by the provider-events topic only', () => {
    const snsReceipt = built.stack.providers!.receiptFunctions.snsReceipt!.function;
    const topic = id(built.stack.providers!.eventsTopic!);
    const fnId = id(snsReceipt);
    const permissions = Object.values(built.resources).filter(
      (r) =>
        r.Type === 'AWS::Lambda::Permission' &&
        JSON.stringify(r.Properties.FunctionName) === JSON.stringify({ 'Fn::GetAtt': [fnId, 'Arn'] }),
    );
    expect(permissions.map((p) => p.Properties)).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': [fnId, 'Arn'] },
        Principal: 'sns.amazonaws.com',
        SourceArn: { Ref: topic },
      },
    ]);
    built.template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'lambda',
      TopicArn: { Ref: topic },
      Endpoint: { 'Fn::GetAtt': [fnId, 'Arn'] },
    });
    // Encrypted, TLS only, and only the messaging services of this account may publish.
    built.template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    const policy = Object.values(built.resources).find((r) => r.Type === 'AWS::SNS::TopicPolicy')!;
    const topicStatements = (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
      .Statement;
    expect(topicStatements).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        expect.objectContaining({
          Effect: 'Allow',
          Action: 'sns:Publish',
          Principal: { Service: ['sms-voice.amazonaws.com', 'social-messaging.amazonaws.com'] },
          Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
        }),
      ]),
    );
    expect(topicStatements.filter((s) => s.Effect === 'Allow')).toHaveLength(1);
    // Any principal of the account that may publish could otherwise mark a verification delivered.
    expect(topicStatements).toContainEqual(
      expect.objectContaining({
        Effect: 'Deny',
        Action: 'sns:Publish',
        Principal: { AWS: '*' },
        Resource: { Ref: topic },
        Condition: { Bool: { 'aws:PrincipalIsAWSService': 'false' } },
      }),
    );
  });

  test('the SMS configuration set publishes its final events to the topic', () => {
    const topic = id(built.stack.providers!.eventsTopic!);
    built.template.hasResourceProperties('AWS::SMSVOICE::ConfigurationSet', {
      EventDestinations: [
        Match.objectLike({
          Enabled: true,
          MatchingEventTypes: Match.arrayWith([
            'TEXT_DELIVERED',
            'RCS_DELIVERED',
            'TEXT_SUCCESSFUL',
            'TEXT_BLOCKED',
          ]),
          SnsDestination: { TopicArn: { Ref: topic } },
        }),
      ],
    });
  });

  test('the removed otp:awsSmsSuccessfulMeans is refused with the reason, not silently ignored', () => {
    expect(() => synth({ [K.providersFile]: EXAMPLE_FILE, 'otp:awsSmsSuccessfulMeans': 'accepted' })).toThrow(
      /otp:awsSmsSuccessfulMeans was removed: an SMS attempt settles on final events only/,
    );
  });

  test('no rule for AWS messaging events: the SNS receipt function is the only receipt function', () => {
    const rules = Object.values(built.template.findResources('AWS::Events::Rule'));
    // The sweeper's schedule is the stack's only rule.
    expect(rules.map((rule) => JSON.stringify(rule.Properties.EventPattern ?? null))).toEqual(['null']);
    expect(Object.keys(built.stack.providers!.receiptFunctions)).toEqual(['snsReceipt']);
  });

  test('send permissions on the configured ARNs only, for the deliver function only', () => {
    const deliverRole = roleOf(built.stack.functions.deliver);
    const sending = statements(built.resources).filter(({ statement }) =>
      actionsOf(statement).some((a) => a.startsWith('sms-voice:') || a.startsWith('social-messaging:')),
    );
    expect(sending.map(({ role }) => role)).toEqual([deliverRole, deliverRole]);
    const sms = sending.find(({ statement }) => actionsOf(statement).includes('sms-voice:SendTextMessage'))!;
    expect(actionsOf(sms.statement)).toEqual(['sms-voice:SendTextMessage']);
    expect(sms.statement.Resource).toEqual([
      EXAMPLE[K.awsSmsOriginationIdentity],
      EXAMPLE[K.awsSmsRcsOriginationIdentity],
      { 'Fn::GetAtt': ['SmsConfigurationSet', 'Arn'] },
    ]);
    const whatsApp = sending.find(({ statement }) =>
      actionsOf(statement).includes('social-messaging:SendWhatsAppMessage'),
    )!;
    // The post-deploy check's read, on the same ARN in the same statement: it fails when the send grant is wrong.
    expect([...actionsOf(whatsApp.statement)].sort()).toEqual([
      'social-messaging:GetLinkedWhatsAppBusinessAccountPhoneNumber',
      'social-messaging:SendWhatsAppMessage',
    ]);
    // The id `phone-number-id-0123…` is the ARN `…:phone-number-id/0123…` (the socialmessaging model's pattern
    // `arn:.*:phone-number-id/[0-9a-zA-Z]+`): a grant on `…/phone-number-id-0123…` names no resource.
    const bareId = (EXAMPLE[K.awsWhatsAppPhoneNumberId] as string).replace(/^phone-number-id-/, '');
    const granted = JSON.stringify(whatsApp.statement.Resource);
    expect(granted).toContain(`:phone-number-id/${bareId}"`);
    expect(granted).not.toContain('phone-number-id/phone-number-id-');
    for (const { statement } of sending) expect(JSON.stringify(statement.Resource)).not.toContain('*');
  });

  test('the Vonage secret is retained and readable by deliver and receipt only', () => {
    const secretId = id(built.stack.providers!.vonageSecret!);
    built.template.hasResource('AWS::SecretsManager::Secret', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({ Description: Match.stringLikeRegexp('Vonage') }),
    });
    const readers = statements(built.resources)
      .filter(({ statement }) => JSON.stringify(statement.Resource).includes(`"${secretId}"`))
      .map(({ role, statement }) => [role, actionsOf(statement)]);
    expect(readers.sort()).toEqual(
      [
        [roleOf(built.stack.functions.deliver), ['secretsmanager:GetSecretValue']],
        [roleOf(built.stack.functions.receipt), ['secretsmanager:GetSecretValue']],
      ].sort(),
    );
    // Its ARN, never its value, in their environment.
    for (const name of ['deliver', 'receipt'] as const) {
      const fnId = id(built.stack.functions[name]);
      const env = (built.resources[fnId]!.Properties.Environment as { Variables: Record<string, unknown> })
        .Variables;
      expect(env.OTP_VONAGE_SECRET_ARN).toEqual({ Ref: secretId });
    }
  });

  test('the receipt function may put RECEIPTTOKEN# items (Vonage replays), and nothing else new', () => {
    const receiptRole = roleOf(built.stack.functions.receipt);
    const puts = statements(built.resources).filter(
      ({ role, statement }) => role === receiptRole && actionsOf(statement).includes('dynamodb:PutItem'),
    );
    expect(puts.map(({ statement }) => [actionsOf(statement), JSON.stringify(statement)])).toEqual([
      [['dynamodb:PutItem'], expect.stringContaining('"RECEIPTTOKEN#*"')],
    ]);
  });

  test('the provider receipt functions have the manifest grants and no key', () => {
    for (const name of PROVIDER_FUNCTION_NAMES) {
      const fn = built.stack.providers!.receiptFunctions[name]!.function;
      const role = roleOf(fn);
      const own = statements(built.resources).filter((s) => s.role === role);
      const dynamo = own.filter(({ statement }) =>
        actionsOf(statement).some((a) => a.startsWith('dynamodb:')),
      );
      expect(dynamo.map(({ statement }) => actionsOf(statement))).toEqual(
        PROVIDER_FUNCTIONS[name].table.map((grant) => grant.actions),
      );
      expect(
        own.some(({ statement }) => actionsOf(statement).some((a) => a.startsWith('secretsmanager:'))),
      ).toBe(false);
    }
  });

  test('the deliver function gets the providers settings', () => {
    const fnId = id(built.stack.functions.deliver);
    const env = (built.resources[fnId]!.Properties.Environment as { Variables: Record<string, unknown> })
      .Variables;
    expect(env).toMatchObject({
      OTP_AWS_SMS_ORIGINATION_IDENTITY: EXAMPLE[K.awsSmsOriginationIdentity],
      OTP_AWS_SMS_RCS_ORIGINATION_IDENTITY: EXAMPLE[K.awsSmsRcsOriginationIdentity],
      OTP_AWS_SMS_CONFIGURATION_SET: { 'Fn::GetAtt': ['SmsConfigurationSet', 'Arn'] },
      OTP_AWS_WHATSAPP_PHONE_NUMBER_ID: EXAMPLE[K.awsWhatsAppPhoneNumberId],
      OTP_AWS_WHATSAPP_TEMPLATE_NAME: EXAMPLE[K.awsWhatsAppTemplateName],
      OTP_VONAGE_FROM: JSON.stringify(EXAMPLE[K.vonageFrom]),
    });
  });

  test('each receipt function has an errors and a throttles alarm on its own metrics', () => {
    for (const name of PROVIDER_FUNCTION_NAMES) {
      const fnId = id(built.stack.providers!.receiptFunctions[name]!.function);
      const alarms = Object.values(built.template.findResources('AWS::CloudWatch::Alarm')).filter(
        (alarm) =>
          JSON.stringify((alarm.Properties as { Dimensions?: unknown }).Dimensions) ===
          JSON.stringify([{ Name: 'FunctionName', Value: { Ref: fnId } }]),
      );
      expect(
        alarms
          .map((alarm) => alarm.Properties as Record<string, unknown>)
          .map((p) => [p.Namespace, p.MetricName, p.Statistic, p.Threshold, p.ComparisonOperator])
          .sort(),
      ).toEqual([
        ['AWS/Lambda', 'Errors', 'Sum', 0, 'GreaterThanThreshold'],
        ['AWS/Lambda', 'Throttles', 'Sum', 0, 'GreaterThanThreshold'],
      ]);
    }
  });

  test('a receipt a receipt function still fails on after 2 retries is kept in an encrypted queue, with an alarm', () => {
    const queue = built.stack.providers!.failedReceiptQueue!;
    const queueId = id(queue);
    built.template.hasResourceProperties('AWS::SQS::Queue', {
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 86_400,
    });
    expect(built.resources[queueId]!.Type).toBe('AWS::SQS::Queue');
    for (const name of PROVIDER_FUNCTION_NAMES) {
      const fnId = id(built.stack.providers!.receiptFunctions[name]!.function);
      built.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: fnId },
        MaximumRetryAttempts: 2,
        MaximumEventAgeInSeconds: 6 * 3600,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queueId, 'Arn'] } } },
      });
      // The function may put its failures there, and nowhere else.
      const role = roleOf(built.stack.providers!.receiptFunctions[name]!.function);
      const statements = Object.values(built.template.findResources('AWS::IAM::Policy'))
        .filter((policy) =>
          JSON.stringify((policy.Properties as { Roles: unknown }).Roles).includes(`"${role}"`),
        )
        .flatMap(
          (policy) =>
            (policy.Properties as { PolicyDocument: { Statement: { Action: unknown; Resource: unknown }[] } })
              .PolicyDocument.Statement,
        );
      expect(statements.filter((s) => JSON.stringify(s.Action).includes('sqs:'))).toEqual([
        expect.objectContaining({ Resource: { 'Fn::GetAtt': [queueId, 'Arn'] } }),
      ]);
    }
    const alarms = Object.values(built.template.findResources('AWS::CloudWatch::Alarm')).filter(
      (alarm) =>
        JSON.stringify((alarm.Properties as { Dimensions?: unknown }).Dimensions) ===
        JSON.stringify([{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }]),
    );
    expect(
      alarms.map((alarm) => {
        const p = alarm.Properties as Record<string, unknown>;
        return [p.MetricName, p.Statistic, p.Threshold, p.ComparisonOperator];
      }),
    ).toEqual([['ApproximateNumberOfMessagesVisible', 'Maximum', 0, 'GreaterThanThreshold']]);
  });

  test("the dashboard shows the receipt functions' invocations, errors, throttles and duration, and their alarms", () => {
    const [dashboard] = Object.values(built.template.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify((dashboard!.Properties as { DashboardBody: unknown }).DashboardBody);
    for (const title of [
      'Provider receipt functions: invocations',
      'Provider receipt functions: errors / throttles',
      'Provider receipt functions: duration p90, ms',
    ])
      expect(body).toContain(title);
    for (const name of PROVIDER_FUNCTION_NAMES) {
      const fn = built.stack.providers!.receiptFunctions[name]!.function;
      const fnRef = JSON.stringify({ Ref: id(fn) });
      // The function's name token appears once per metric line: invocations, errors, throttles, duration.
      expect(body.split(fnRef).length - 1).toBe(4);
      for (const metric of ['Invocations', 'Errors', 'Throttles', 'Duration']) expect(body).toContain(metric);
      const alarmIds = Object.entries(built.template.findResources('AWS::CloudWatch::Alarm'))
        .filter(([, alarm]) => JSON.stringify(alarm.Properties).includes(fnRef))
        .map(([alarmId]) => alarmId);
      expect(alarmIds).toHaveLength(2);
      for (const alarmId of alarmIds)
        expect(body).toContain(JSON.stringify({ 'Fn::GetAtt': [alarmId, 'Arn'] }));
    }
  });

  test('cdk-nag finds nothing unacknowledged', () => {
    const report = new AwsSolutionsChecks().validateScope(built.app);
    const findings = report.violations.map(
      (v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
    );
    expect(findings).toEqual([]);
    expect(Annotations.fromStack(built.stack).findError('*', Match.anyValue())).toEqual([]);
  });
});

describe('no provider configuration', () => {
  test('no topic, no rule for provider events, no provider function, no Vonage secret, no send permission', () => {
    const { template, resources } = synth({});
    template.resourceCountIs('AWS::SNS::Topic', 0);
    template.resourceCountIs('AWS::SMSVOICE::ConfigurationSet', 0);
    template.resourceCountIs('AWS::Lambda::Function', FUNCTION_NAMES.length);
    template.resourceCountIs('AWS::Lambda::EventInvokeConfig', 1); // the sweeper's (no retries), nothing else
    expect(JSON.stringify(resources)).not.toMatch(
      /sms-voice|social-messaging|Vonage|RECEIPTTOKEN|OTP_PROVIDERS|SnsReceipt|EventReceipt|receipt functions|FailedReceipt/,
    );
  });
});

describe('provider settings are checked at synth time', () => {
  const sms = { sms: 'aws-sms' };
  test.each([
    [{ [K.providers]: '{not json' }, /otp:providers is not JSON/],
    [{ [K.providers]: { sms: 'pigeon' } }, /otp:providers: is not valid: sms/],
    [{ [K.providers]: { viber: 'aws-sms' } }, /aws-sms does not carry viber/],
    [{ [K.providers]: sms, [K.awsSmsCreateConfigurationSet]: true }, /set otp:awsSmsOriginationIdentity/],
    [
      {
        [K.providers]: sms,
        [K.awsSmsOriginationIdentity]: 'pool-123',
        [K.awsSmsCreateConfigurationSet]: true,
      },
      /otp:awsSmsOriginationIdentity must be the ARN of a pool/,
    ],
    [
      {
        [K.providers]: sms,
        [K.awsSmsOriginationIdentity]: 'arn:aws:sms-voice:us-east-1:111122223333:pool/pool-1',
      },
      /aws-sms needs a configuration set/,
    ],
    [
      {
        // The Service Authorization Reference's sender-id ARN ends with the country: sender-id/NAME/COUNTRY.
        [K.providers]: sms,
        [K.awsSmsOriginationIdentity]: 'arn:aws:sms-voice:us-east-1:111122223333:sender-id/Acme',
        [K.awsSmsCreateConfigurationSet]: true,
      },
      /otp:awsSmsOriginationIdentity must be the ARN of a pool, phone number or sender id/,
    ],
    [
      { [K.providers]: { rcs: 'aws-sms' }, [K.awsSmsCreateConfigurationSet]: true },
      /set otp:awsSmsRcsOriginationIdentity/,
    ],
    [
      {
        [K.providers]: { rcs: 'aws-sms' },
        [K.awsSmsRcsOriginationIdentity]: 'arn:aws:sms-voice:us-east-1:111122223333:phone-number/phone-1',
        [K.awsSmsCreateConfigurationSet]: true,
      },
      /otp:awsSmsRcsOriginationIdentity must be the ARN of an RCS agent/,
    ],
    [{ [K.providers]: { whatsapp: 'aws-whatsapp' } }, /set otp:awsWhatsAppPhoneNumberId/],
    [{ [K.providers]: { viber: 'vonage' } }, /set otp:vonageFrom.viber/],
    [
      { [K.providers]: { viber: 'vonage' }, [K.vonageFrom]: { viber: 'Acme' } },
      /otp:vonageFrom.viber must be your Viber Business Message ID \(digits, from Vonage\), got "Acme"/,
    ],
    [
      { [K.providers]: { viber: 'vonage' }, [K.awsWhatsAppTemplateName]: 'otp' },
      /gives aws-whatsapp no channel/,
    ],
    [{ [K.awsSmsMaxPrice]: '0.05' }, /set without otp:providers/],
    // The model's MaxPrice: 2 to 8 characters matching [0-9]{0,2}\.[0-9]{1,5}. AWS refuses any other value on
    // every send, so synth does.
    ...['1', '100.5', '0.123456', '.'].map((price): [Record<string, unknown>, RegExp] => [
      { [K.providersFile]: EXAMPLE_FILE, [K.awsSmsMaxPrice]: price },
      /otp:awsSmsMaxPrice must be a price in USD per message part as AWS takes it/,
    ]),
    [
      {
        [K.providersFile]: EXAMPLE_FILE,
        [K.awsSmsRegisteredTemplates]: { IN: { entityId: '1101', templateId: '1107', text: 'Your code' } },
      },
      /otp:awsSmsRegisteredTemplates is not valid: IN.text/,
    ],
    [
      {
        [K.providers]: { whatsapp: 'aws-whatsapp' },
        [K.awsWhatsAppTemplateName]: 'otp',
        // The prefixed id inside an ARN: the model's pattern refuses it, and IAM would match nothing.
        [K.awsWhatsAppPhoneNumberId]:
          'arn:aws:social-messaging:us-east-1:111122223333:phone-number-id/phone-number-id-0123abcd',
      },
      /otp:awsWhatsAppPhoneNumberId must be a WhatsApp phone number id/,
    ],
    [
      {
        [K.providers]: { whatsapp: 'aws-whatsapp' },
        [K.awsWhatsAppTemplateName]: 'otp',
        [K.awsWhatsAppPhoneNumberId]: 'phone-number-id-0123abcd',
        [K.awsWhatsAppMetaApiVersion]: 'v20.0',
      },
      /otp:awsWhatsAppMetaApiVersion "v20.0" was retired by Meta on 2026-09-24/,
    ],
    [
      {
        [K.providers]: { whatsapp: 'aws-whatsapp' },
        [K.awsWhatsAppTemplateName]: 'otp',
        [K.awsWhatsAppPhoneNumberId]: 'phone-number-id-0123abcd',
        [K.awsWhatsAppMetaApiVersion]: '20',
      },
      /otp:awsWhatsAppMetaApiVersion "20" must be like v24.0/,
    ],
    [{ [K.providersFile]: 'no-such-file.json' }, /cannot read "no-such-file.json"/],
  ])('%j fails with a clear error', (context, message) => {
    expect(() => synth(context)).toThrow(message);
  });

  test('a sender id (with its country) for sms, a pool holding the RCS agent for rcs: IAM on exactly those ARNs', () => {
    const senderId = 'arn:aws:sms-voice:eu-west-2:111122223333:sender-id/Acme/GB';
    const rcsPool = 'arn:aws:sms-voice:eu-west-2:111122223333:pool/pool-0123456789abcdef0123456789abcdef';
    const { resources } = synth({
      [K.providers]: JSON.stringify({ sms: 'aws-sms', rcs: 'aws-sms' }),
      [K.awsSmsOriginationIdentity]: senderId,
      [K.awsSmsRcsOriginationIdentity]: rcsPool,
      [K.awsSmsCreateConfigurationSet]: true,
      [K.awsSmsProtectConfigurationId]: 'protect-0123456789abcdef',
    });
    const statement = statements(resources).find(({ statement: s }) =>
      actionsOf(s).includes('sms-voice:SendTextMessage'),
    )!.statement;
    // CDK orders the resources of a statement; the set is what counts.
    expect(statement.Resource).toHaveLength(4);
    expect(statement.Resource).toEqual(
      expect.arrayContaining([
        senderId,
        rcsPool,
        { 'Fn::GetAtt': ['SmsConfigurationSet', 'Arn'] },
        {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':sms-voice:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              ':protect-configuration/protect-0123456789abcdef',
            ],
          ],
        },
      ]),
    );
  });

  test('WhatsApp given by ARN: granted as given; the Meta API version defaults to a current one', () => {
    const phoneArn = 'arn:aws:social-messaging:eu-west-1:111122223333:phone-number-id/0123abcd';
    const { resources } = synth({
      [K.providers]: JSON.stringify({ whatsapp: 'aws-whatsapp' }),
      [K.awsWhatsAppPhoneNumberId]: phoneArn,
      [K.awsWhatsAppTemplateName]: 'otp',
    });
    const statement = statements(resources).find(({ statement: s }) =>
      actionsOf(s).includes('social-messaging:SendWhatsAppMessage'),
    )!.statement;
    expect(statement.Resource).toEqual(phoneArn);
    const env = (
      Object.values(resources).find(
        (r) =>
          r.Type === 'AWS::Lambda::Function' &&
          JSON.stringify(r.Properties).includes('OTP_AWS_WHATSAPP_PHONE_NUMBER_ID'),
      )!.Properties.Environment as { Variables: Record<string, string> }
    ).Variables;
    expect(env.OTP_AWS_WHATSAPP_META_API_VERSION).toBe(DEFAULT_META_API_VERSION);
    expect(metaApiVersionProblem(DEFAULT_META_API_VERSION, new Date())).toBeUndefined();
  });

  test("Meta's retirement dates decide which versions synth takes", () => {
    expect(metaApiVersionProblem('v21.0', new Date('2027-01-20T12:00:00Z'))).toBeUndefined();
    expect(metaApiVersionProblem('v21.0', new Date('2027-01-21T00:00:00Z'))).toMatch(/retired/);
    expect(metaApiVersionProblem('v18.0', new Date('2020-01-01T00:00:00Z'))).toMatch(/older than v19.0/);
    expect(metaApiVersionProblem('v27.0', new Date('2030-01-01T00:00:00Z'))).toBeUndefined();
  });

  test('a valid MaxPrice and India’s registered template reach the deliver function', () => {
    const template = {
      IN: {
        entityId: '1101456789012345678',
        templateId: '1107161234567890123',
        text: '{code} is your code.',
      },
    };
    const { stack, template: synthesized } = synth({
      [K.providersFile]: EXAMPLE_FILE,
      [K.awsSmsMaxPrice]: '.05',
      [K.awsSmsRegisteredTemplates]: JSON.stringify(template),
    });
    const deliver = stack.resolve(
      (stack.functions.deliver.node.defaultChild as CfnElement).logicalId,
    ) as string;
    const env = (
      synthesized.toJSON() as {
        Resources: Record<string, { Properties: { Environment: { Variables: Record<string, string> } } }>;
      }
    ).Resources[deliver]!.Properties.Environment.Variables;
    expect(env.OTP_AWS_SMS_MAX_PRICE).toBe('.05');
    expect(JSON.parse(env.OTP_AWS_SMS_REGISTERED_TEMPLATES!)).toEqual(template);
  });

  test('with real providers, the errors only an operator fixes raise alarms (sandbox, access denied, MaxPrice, spend)', () => {
    const { template } = synth({ [K.providersFile]: EXAMPLE_FILE });
    const codes = [
      'sandbox_destination_not_verified',
      'access_denied',
      'price_over_threshold',
      'monthly_spend_limit',
    ];
    for (const code of codes)
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ProviderErrors',
        Namespace: 'OtpVerify',
        Dimensions: Match.arrayWith([{ Name: 'code', Value: code }]),
        Threshold: 0,
      });
  });

  test('an existing configuration set by name: IAM on its ARN in the stack account', () => {
    const { resources } = synth({
      [K.providers]: JSON.stringify(sms),
      [K.awsSmsOriginationIdentity]: 'arn:aws:sms-voice:us-east-1:111122223333:phone-number/phone-1',
      [K.awsSmsConfigurationSet]: 'otp-events',
    });
    const statement = statements(resources).find(({ statement: s }) =>
      actionsOf(s).includes('sms-voice:SendTextMessage'),
    )!.statement;
    expect(JSON.stringify(statement.Resource)).toContain(':configuration-set/otp-events');
    expect(Object.values(resources).filter((r) => r.Type === 'AWS::SMSVOICE::ConfigurationSet')).toEqual([]);
  });
});
