/**
 * The real delivery providers of a deployment (lib/provider-config.ts, docs/providers.md): what each sending
 * function needs to send through them, and the paths their receipts come back on.
 *
 * - Sending: the functions whose manifest entry `sendsWith` a provider get its settings in their environment and
 *   the send permission on exactly the configured ARNs (`sms-voice:SendTextMessage` on the origination identity,
 *   the RCS agent, the configuration set and the protect configuration; `social-messaging:SendWhatsAppMessage`
 *   and, for the post-deploy check, `GetLinkedWhatsAppBusinessAccountPhoneNumber` on the WhatsApp phone number).
 *   No `*`.
 * - Vonage: a retained secret (`{applicationId, privateKey, signatureSecret}`, set by the operator), readable only
 *   by the functions whose entry lists it in `providerSecrets` (deliver: the application key; receipt: the
 *   signature secret).
 * - AWS receipts: an SNS topic (KMS-encrypted, TLS only) that AWS End User Messaging SMS and Social may publish to
 *   from this account; the SNS receipt function subscribes, and only that topic may invoke it (SourceArn). With
 *   `otp:awsSmsCreateConfigurationSet` the SMS configuration set and its SNS event destination are created here;
 *   otherwise the operator points an existing set at the topic (output ProviderEventsTopicArn), and the
 *   WhatsApp Business Account's event destination too.
 * - No EventBridge rule: AWS's EventBridge events of either service would only repeat the SNS receipts (SMS) or
 *   carry no reference of ours (WhatsApp); docs/providers.md, "Known gaps".
 *
 * A deployment with no provider configuration creates none of this.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as smsvoice from 'aws-cdk-lib/aws-smsvoice';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import type { KeyGroup } from '../../functions/adapters/keyring';
import {
  SMS_DELIVERED,
  SMS_FAILED,
  SMS_SETTLED_ON_SUCCESS,
} from '../../functions/adapters/providers/aws-events';
import {
  FUNCTIONS,
  FUNCTION_NAMES,
  PROVIDER_FUNCTIONS,
  type FunctionName,
  type FunctionSpec,
  type ProviderFunctionName,
} from '../functions';
import { configurationSetArn, whatsAppPhoneNumberArn, type ProviderDeployment } from '../provider-config';
import { Grouping } from './logical-ids';
import { OtpFunction } from './otp-function';

/**
 * The SMS and RCS events the configuration set publishes: the ones the receipt parser may act on (aws-events.ts),
 * `TEXT_SUCCESSFUL` among them (final in countries that report no delivery). Each event published is an SNS
 * request and a receipt function invocation.
 */
const SMS_RECEIPT_EVENT_TYPES: readonly string[] = [...SMS_DELIVERED, SMS_SETTLED_ON_SUCCESS, ...SMS_FAILED];

/** The services that publish provider events to the topic. */
const PUBLISHERS = ['sms-voice.amazonaws.com', 'social-messaging.amazonaws.com'];

export interface ProvidersProps {
  providers: ProviderDeployment;
  functions: Record<FunctionName, NodejsFunction>;
  /** What an OtpFunction needs (the receipt functions are built like every other). */
  table: dynamodb.ITable;
  keySecrets: Record<KeyGroup, secretsmanager.ISecret>;
  environment: Record<string, string>;
  logRetention: logs.RetentionDays;
  /** X-Ray active tracing of the receipt functions (`otp:tracing`). */
  tracing: boolean;
}

export class Providers extends Grouping {
  readonly vonageSecret?: secretsmanager.Secret;
  readonly eventsTopic?: sns.Topic;
  readonly configurationSet?: smsvoice.CfnConfigurationSet;
  readonly receiptFunctions: Partial<Record<ProviderFunctionName, OtpFunction>> = {};
  /** The receipts the receipt functions failed on after Lambda's retries (with AWS providers only). */
  failedReceiptQueue?: sqs.Queue;

  /** The receipt functions' Lambdas (for their alarms and dashboard widgets). */
  get receiptLambdas(): Partial<Record<ProviderFunctionName, NodejsFunction>> {
    return Object.fromEntries(
      Object.entries(this.receiptFunctions).map(([name, fn]) => [name, fn.function]),
    ) as Partial<Record<ProviderFunctionName, NodejsFunction>>;
  }

  constructor(scope: Construct, id: string, props: ProvidersProps) {
    super(scope, id);
    const { providers } = props;
    const stack = Stack.of(this);
    const arn = (service: string) => (resource: string) =>
      stack.formatArn({ service, resource: resource.split('/')[0]!, resourceName: resource.split('/')[1] });
    const usesAws = providers.inUse.includes('aws-sms') || providers.inUse.includes('aws-whatsapp');

    // AWS receipts: the topic, its key, and the function only that topic may invoke.
    if (usesAws) {
      const key = new kms.Key(this, 'ProviderEventsKey', {
        description: 'Encrypts the provider-events topic (SMS, RCS and WhatsApp delivery events)',
        enableKeyRotation: true,
        removalPolicy: RemovalPolicy.DESTROY,
      });
      const topic = (this.eventsTopic = new sns.Topic(this, 'ProviderEventsTopic', {
        displayName: 'OTP provider delivery events',
        masterKey: key,
        enforceSSL: true,
      }));
      // A receipt on this topic is believed (it can mark a verification delivered): no principal of the account
      // may publish, whatever its own IAM policy allows; only the messaging services below. An explicit deny in
      // the resource policy wins over any allow (IAM policy evaluation); aws:PrincipalIsAWSService is false for
      // every IAM user and role, and true for a service principal calling on its own behalf.
      topic.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'OnlyTheMessagingServicesPublish',
          effect: iam.Effect.DENY,
          actions: ['sns:Publish'],
          principals: [new iam.AnyPrincipal()],
          resources: [topic.topicArn],
          conditions: { Bool: { 'aws:PrincipalIsAWSService': 'false' } },
        }),
      );
      for (const service of PUBLISHERS) {
        const principal = new iam.ServicePrincipal(service);
        const fromThisAccount = { StringEquals: { 'aws:SourceAccount': stack.account } };
        topic.addToResourcePolicy(
          new iam.PolicyStatement({
            actions: ['sns:Publish'],
            principals: [principal],
            resources: [topic.topicArn],
            conditions: fromThisAccount,
          }),
        );
        key.addToResourcePolicy(
          new iam.PolicyStatement({
            actions: ['kms:GenerateDataKey*', 'kms:Decrypt'],
            principals: [principal],
            resources: ['*'],
            conditions: fromThisAccount,
          }),
        );
      }
      const snsReceipt = this.receiptFunction('snsReceipt', props);
      // LambdaSubscription: the subscription, and a Lambda permission for sns.amazonaws.com with this topic as
      // SourceArn, the function's only invoker.
      topic.addSubscription(new subscriptions.LambdaSubscription(snsReceipt.function));

      if (providers.awsSms?.configurationSet === 'create') {
        this.configurationSet = new smsvoice.CfnConfigurationSet(this, 'SmsConfigurationSet', {
          eventDestinations: [
            {
              eventDestinationName: 'otp-receipts',
              enabled: true,
              matchingEventTypes: [...SMS_RECEIPT_EVENT_TYPES],
              snsDestination: { topicArn: topic.topicArn },
            },
          ],
        });
        this.configurationSet.node.addDependency(topic);
      }

      new CfnOutput(stack, 'ProviderEventsTopicArn', {
        value: topic.topicArn,
        description:
          'SNS topic for provider events: point the SMS configuration set and the WhatsApp Business Account event destinations at it',
      });
    }

    // A receipt its function still failed on after Lambda's two retries (the table throttled, a bug) would be
    // dropped, and its attempt would wait out the channel and the next channel be sent and paid for. It is kept
    // instead, with the error, to be replayed (docs/providers.md, "Failed receipts"): the receipt functions
    // only move a delivery forward, so replaying one, even twice, is safe.
    if (Object.keys(this.receiptFunctions).length > 0) {
      const failed = (this.failedReceiptQueue = new sqs.Queue(this, 'FailedReceiptQueue', {
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
      }));
      Validations.of(failed).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason:
          "This queue is the end of the line: the receipt functions' on-failure destination (Lambda asynchronous " +
          "invocation), which cdk-nag does not count as a dead-letter queue. Only the operator's replay reads it.",
      });
      for (const fn of Object.values(this.receiptFunctions)) {
        fn.function.configureAsyncInvoke({
          onFailure: new destinations.SqsDestination(failed),
          retryAttempts: 2,
          // Lambda's longest: a receipt hours late still settles its record (DELIVERED, the webhook event).
          maxEventAge: Duration.hours(6),
        });
      }
      new CfnOutput(stack, 'FailedReceiptQueueUrl', {
        value: failed.queueUrl,
        description:
          'SQS queue of the provider receipts the receipt functions failed on (replay them; docs/providers.md)',
      });
    }

    // Vonage's credentials: created empty-ish, the operator puts the JSON (docs/providers.md).
    if (providers.inUse.includes('vonage')) {
      const secret = (this.vonageSecret = new secretsmanager.Secret(this, 'VonageSecret', {
        description:
          'Vonage credentials of the OTP service: JSON {"applicationId", "privateKey", "signatureSecret"} (put by the operator)',
        removalPolicy: RemovalPolicy.RETAIN,
      }));
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          "Vonage's application key and signature secret are issued by Vonage (its dashboard), not by Secrets " +
          'Manager: rotation is done there and the new values put here (docs/providers.md).',
      });
      new CfnOutput(stack, 'VonageSecretArn', {
        value: secret.secretArn,
        description:
          'Secrets Manager secret to put the Vonage application id, private key and signature secret in',
      });
    }

    // What each sending or secret-reading function gets.
    const built: [FunctionSpec, NodejsFunction][] = [
      ...FUNCTION_NAMES.map((name): [FunctionSpec, NodejsFunction] => [
        FUNCTIONS[name],
        props.functions[name],
      ]),
      ...Object.entries(this.receiptFunctions).map(([name, fn]): [FunctionSpec, NodejsFunction] => [
        PROVIDER_FUNCTIONS[name as ProviderFunctionName],
        fn.function,
      ]),
    ];
    for (const [spec, fn] of built) {
      if (spec.sendsWith?.includes('aws-sms') && providers.awsSms) {
        const sms = providers.awsSms;
        const configurationSet =
          sms.configurationSet === 'create'
            ? this.configurationSet!.attrArn
            : configurationSetArn(sms.configurationSet.existing, arn('sms-voice'));
        const environment: Record<string, string | undefined> = {
          OTP_AWS_SMS_ORIGINATION_IDENTITY: sms.originationIdentityArn,
          OTP_AWS_SMS_RCS_ORIGINATION_IDENTITY: sms.rcsOriginationIdentityArn,
          // ConfigurationSetName takes the name or the ARN.
          OTP_AWS_SMS_CONFIGURATION_SET: configurationSet,
          OTP_AWS_SMS_PROTECT_CONFIGURATION_ID: sms.protectConfigurationId,
          OTP_AWS_SMS_MAX_PRICE: sms.maxPrice,
          OTP_AWS_SMS_REGISTERED_TEMPLATES: sms.registeredTemplates,
        };
        addEnvironment(fn, environment);
        // The Service Authorization Reference lists SendTextMessage's resource types as configuration-set,
        // phone-number, pool, protect-configuration and sender-id (docs/providers.md): an RCS agent is not among
        // them, which is why a pool holding the agent alone is the documented choice for `rcs`. The agent's
        // ARN, when given, is still granted here: harmless if IAM never checks it, needed if AWS adds the type.
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['sms-voice:SendTextMessage'],
            resources: [
              sms.originationIdentityArn,
              sms.rcsOriginationIdentityArn,
              configurationSet,
              sms.protectConfigurationId &&
                arn('sms-voice')(`protect-configuration/${sms.protectConfigurationId}`),
            ].filter((resource): resource is string => resource !== undefined),
          }),
        );
      }
      if (spec.sendsWith?.includes('aws-whatsapp') && providers.awsWhatsApp) {
        const whatsApp = providers.awsWhatsApp;
        addEnvironment(fn, {
          OTP_AWS_WHATSAPP_PHONE_NUMBER_ID: whatsApp.phoneNumberId,
          OTP_AWS_WHATSAPP_TEMPLATE_NAME: whatsApp.templateName,
          OTP_AWS_WHATSAPP_TEMPLATE_LANGUAGE: whatsApp.templateLanguage,
          OTP_AWS_WHATSAPP_META_API_VERSION: whatsApp.metaApiVersion,
        });
        // The read is the post-deploy check's (functions/adapters/providers/check.ts): in the same statement, on
        // the same ARN, so that it fails exactly when the send grant is wrong; it sends nothing.
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions: [
              'social-messaging:SendWhatsAppMessage',
              'social-messaging:GetLinkedWhatsAppBusinessAccountPhoneNumber',
            ],
            resources: [whatsAppPhoneNumberArn(whatsApp.phoneNumberId, arn('social-messaging'))],
          }),
        );
      }
      if (spec.providerSecrets?.includes('vonage') && this.vonageSecret && providers.vonage) {
        const vonage = providers.vonage;
        addEnvironment(fn, {
          OTP_VONAGE_SECRET_ARN: this.vonageSecret.secretArn,
          OTP_VONAGE_BASE_URL: vonage.baseUrl,
          OTP_VONAGE_FROM: Object.keys(vonage.from).length > 0 ? JSON.stringify(vonage.from) : undefined,
          OTP_VONAGE_WHATSAPP_TEMPLATE_NAME: vonage.whatsAppTemplateName,
          OTP_VONAGE_WHATSAPP_TEMPLATE_LANGUAGE: vonage.whatsAppTemplateLanguage,
        });
        fn.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['secretsmanager:GetSecretValue'],
            resources: [this.vonageSecret.secretArn],
          }),
        );
      }
    }
  }

  /** A receipt function of the manifest's PROVIDER_FUNCTIONS. */
  private receiptFunction(name: ProviderFunctionName, props: ProvidersProps): OtpFunction {
    const fn = new OtpFunction(this, {
      spec: PROVIDER_FUNCTIONS[name],
      table: props.table,
      keySecrets: props.keySecrets,
      environment: props.environment,
      logRetention: props.logRetention,
      tracing: props.tracing,
      providersInUse: props.providers.inUse,
    });
    this.receiptFunctions[name] = fn;
    return fn;
  }
}

function addEnvironment(fn: NodejsFunction, environment: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(environment))
    if (value !== undefined) fn.addEnvironment(name, value);
}
