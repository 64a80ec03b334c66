/**
 * What a `cdk deploy` of a newer commit over a running stack must not do: replace a resource that holds data, or
 * whose name or address someone outside the stack was given. CloudFormation replaces a resource whose logical id
 * changed (a new one is created, the old one deleted, or orphaned when retained), and a refactor of the constructs
 * can change a logical id without anyone meaning to (lib/constructs/logical-ids.ts). So every resource of these
 * types, in each configuration that adds some, is pinned here by logical id and by its deletion and replacement
 * policies. A failure names the resource and what a replacement would cost; change a pin only with a migration
 * for the deployments already running (docs/deploy.md, "Upgrading").
 */
import * as path from 'node:path';
import { synthUnbundled } from '../support/cdk';

/** What replacing a resource of each type costs a running deployment. */
const WHY: Record<string, string> = {
  'AWS::DynamoDB::Table':
    'a new empty table: balances, API keys, ledgers and codes in flight stay behind in the retained one',
  'AWS::SecretsManager::Secret':
    'a new key or an empty secret: codes in flight fail, the carrier, Vonage or webhook receivers must be ' +
    'reconfigured, tagged API keys are refused',
  'AWS::Cognito::UserPool':
    "a new empty pool: every console user is gone, and members point at the old pool's subs",
  'AWS::Cognito::UserPoolDomain': 'its prefix is global: a second domain with it fails the deploy',
  'AWS::Cognito::UserPoolClient': 'a new client id: every console session ends',
  'AWS::Cognito::UserPoolGroup': 'its name is fixed: a second group `operators` in the pool fails the deploy',
  'AWS::SQS::Queue':
    'the messages in it are lost: webhook retries queued up to 30 hours ahead, dead letters, the positions of ' +
    'dropped guard batches, receipts waiting to be replayed',
  'AWS::Logs::LogGroup': "its logs are deleted (the named one's new copy collides with it)",
  'AWS::Lambda::EventSourceMapping':
    'a new mapping starts at its starting position: the webhook events function at TRIM_HORIZON posts up to 24 ' +
    'hours of events again, the guard at LATEST skips the records in between',
  'AWS::StepFunctions::StateMachine': 'the delivery executions in flight',
  'AWS::ApiGatewayV2::Api': 'a new URL: every caller and carrier posts to the old one',
  'AWS::ApiGatewayV2::Stage': '$default is a fixed name: a second one collides',
  'AWS::Lambda::Url': 'a new receipt URL: providers post to the old one',
  'AWS::CloudFront::Distribution': 'a new EdgeUrl: callers use the old one',
  'AWS::SNS::Topic':
    'a new ARN: the SMS configuration set and the WhatsApp event destination, set outside the stack, still ' +
    'point at the old one and receipts stop',
  'AWS::KMS::Key': "the provider-events topic's key is scheduled for deletion",
  'AWS::SMSVOICE::ConfigurationSet':
    'a new configuration set without the event destinations set on the old one',
};

type Policy = 'Retain' | 'Delete' | undefined;
/** `plain`: every deployment; `providers`: with providers.example.json; `edge`: with the edge and receipt URL. */
type Variant = 'plain' | 'providers' | 'edge';
const pin = (type: string, policy: Policy, variant: Variant = 'plain') => ({ type, policy, variant });

const PINNED: Record<string, ReturnType<typeof pin>> = {
  TableCD117FA1: pin('AWS::DynamoDB::Table', 'Retain'),
  CodeHashKey796E4AF4: pin('AWS::SecretsManager::Secret', 'Retain'),
  CodeSealKey03B79D09: pin('AWS::SecretsManager::Secret', 'Retain'),
  CarrierKey719C9F8F: pin('AWS::SecretsManager::Secret', 'Retain'),
  WebhookKeyFF363931: pin('AWS::SecretsManager::Secret', 'Retain'),
  ApiKeyTagKeyB98EE086: pin('AWS::SecretsManager::Secret', 'Retain'),
  VonageSecret2D2D775D: pin('AWS::SecretsManager::Secret', 'Retain', 'providers'),
  ConsoleUserPoolD31988A6: pin('AWS::Cognito::UserPool', 'Retain'),
  ConsoleUserPoolConsoleDomain0A8EEEDA: pin('AWS::Cognito::UserPoolDomain', undefined),
  ConsoleUserPoolConsoleClientD33A1815: pin('AWS::Cognito::UserPoolClient', undefined),
  ConsoleOperatorsGroup: pin('AWS::Cognito::UserPoolGroup', undefined),
  WebhookQueueA9D318EA: pin('AWS::SQS::Queue', 'Delete'),
  WebhookDeadLetterQueue6DD1CE59: pin('AWS::SQS::Queue', 'Delete'),
  GuardSignalsStreamGuardDroppedBatches57876FDD: pin('AWS::SQS::Queue', 'Delete'),
  FailedReceiptQueue45DD750F: pin('AWS::SQS::Queue', 'Delete', 'providers'),
  SendLogsBECBB0F6: pin('AWS::Logs::LogGroup', 'Delete'),
  CheckLogs9B0D688B: pin('AWS::Logs::LogGroup', 'Delete'),
  FetchLogs9066FDA7: pin('AWS::Logs::LogGroup', 'Delete'),
  ReceiptLogs64328464: pin('AWS::Logs::LogGroup', 'Delete'),
  DeliverLogsFBD05EE6: pin('AWS::Logs::LogGroup', 'Delete'),
  AfterWaitLogsE26B2F62: pin('AWS::Logs::LogGroup', 'Delete'),
  SweeperLogs977E0681: pin('AWS::Logs::LogGroup', 'Delete'),
  WebhookEventsLogs831FABD5: pin('AWS::Logs::LogGroup', 'Delete'),
  GuardSignalsLogs2103D3B1: pin('AWS::Logs::LogGroup', 'Delete'),
  WebhookSenderLogs674A6ED5: pin('AWS::Logs::LogGroup', 'Delete'),
  ConsoleLogs00024E65: pin('AWS::Logs::LogGroup', 'Delete'),
  DeliveryLogsAB0E43B0: pin('AWS::Logs::LogGroup', 'Delete'),
  ApiAccessLogsE9DF007D: pin('AWS::Logs::LogGroup', 'Delete'),
  SnsReceiptLogsEF5DDC75: pin('AWS::Logs::LogGroup', 'Delete', 'providers'),
  WebhookEventsFunctionDynamoDBEventSourceOtpVerifyTable366CF5AFD5C7C494: pin(
    'AWS::Lambda::EventSourceMapping',
    undefined,
  ),
  GuardSignalsFunctionDynamoDBEventSourceOtpVerifyTable366CF5AFD5271A89: pin(
    'AWS::Lambda::EventSourceMapping',
    undefined,
  ),
  WebhookSenderFunctionSqsEventSourceOtpVerifyWebhookDeliveryWebhookQueueBE595886D6AE6888: pin(
    'AWS::Lambda::EventSourceMapping',
    undefined,
  ),
  Delivery5F6C039D: pin('AWS::StepFunctions::StateMachine', 'Delete'),
  ApiF70053CD: pin('AWS::ApiGatewayV2::Api', undefined),
  ApiDefaultStage829AE46A: pin('AWS::ApiGatewayV2::Stage', undefined),
  ReceiptFunctionFunctionUrl8FCCB45F: pin('AWS::Lambda::Url', undefined, 'edge'),
  EdgeDistribution7D23752A: pin('AWS::CloudFront::Distribution', undefined, 'edge'),
  ProviderEventsTopicDA1DE6C8: pin('AWS::SNS::Topic', undefined, 'providers'),
  ProviderEventsKey779C16C5: pin('AWS::KMS::Key', 'Delete', 'providers'),
  SmsConfigurationSet: pin('AWS::SMSVOICE::ConfigurationSet', undefined, 'providers'),
};

const CONTEXTS: Record<Variant, Record<string, unknown>> = {
  plain: {},
  providers: { 'otp:providersFile': path.join(__dirname, '..', '..', 'providers.example.json') },
  edge: { 'otp:edge': true, 'otp:receiptReservedConcurrency': 10, 'otp:receiptFunctionUrl': true },
};

describe.each(Object.keys(CONTEXTS) as Variant[])('the %s stack', (variant) => {
  const synth = synthUnbundled(CONTEXTS[variant]);
  afterAll(synth.cleanup);
  const resources = synth.resources as Record<string, { Type: string; DeletionPolicy?: string }>;
  const policies = (id: string) => {
    const resource = resources[id] as { DeletionPolicy?: string; UpdateReplacePolicy?: string };
    return { deletion: resource.DeletionPolicy, replacement: resource.UpdateReplacePolicy };
  };

  test('every resource that holds data or an address keeps its logical id and its policies', () => {
    const problems: string[] = [];
    for (const [id, { Type: type }] of Object.entries(resources)) {
      if (!(type in WHY)) continue;
      const pinned = PINNED[id];
      if (!pinned) {
        problems.push(
          `${id} (${type}) is new or renamed: pin it here; replacing a deployed one means ${WHY[type]}`,
        );
        continue;
      }
      if (pinned.type !== type) problems.push(`${id} is a ${type}, pinned as a ${pinned.type}`);
      const { deletion, replacement } = policies(id);
      if (deletion !== pinned.policy || replacement !== pinned.policy)
        problems.push(
          `${id} (${type}): DeletionPolicy ${deletion}, UpdateReplacePolicy ${replacement}; pinned ${pinned.policy}`,
        );
    }
    const expected = Object.entries(PINNED).filter(([, p]) => p.variant === 'plain' || p.variant === variant);
    for (const [id, { type }] of expected)
      if (!resources[id])
        problems.push(`${id} (${type}) is gone: a deploy would delete or replace it, and ${WHY[type]}`);
    expect(problems).toEqual([]);
  });
});
