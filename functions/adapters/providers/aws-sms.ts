import type {
  PinpointSMSVoiceV2Client,
  SendTextMessageCommandInput,
} from '@aws-sdk/client-pinpoint-sms-voice-v2';
import {
  ProviderError,
  type OutboundMessage,
  type Provider,
  type ProviderAnswer,
} from '../../core/providers';
import { AWS_SMS_PROVIDER_NAME, REFERENCE_CONTEXT_KEY } from './aws-events';
import { awsClientConfig } from '../aws-client-config';
import { awsProviderError } from './aws-errors';
import { renderRegistered, type RegisteredSmsTemplate } from './registered-templates';

/**
 * AWS End User Messaging SMS (`pinpoint-sms-voice-v2` SendTextMessage) for `sms` and `rcs`.
 *
 * RCS and our own fallback: plain-text RCS goes through the same SendTextMessage, sent from an RCS agent. AWS
 * falls back to SMS by itself when the origination identity is a pool holding the agent and SMS numbers. We do
 * not let it: `rcs` is sent from `rcsOriginationIdentity`, which must be the RCS agent alone (its id or ARN, or
 * a pool with the agent only), so an RCS message that cannot be delivered fails as RCS and our workflow moves to
 * the next channel, in the deployment's price order, billed and receipted like any other. (Letting AWS fall back
 * would hide from us which channel carried the code and could send a second SMS after our own SMS channel.)
 * Should a deployment still use a pool with fallback, `RCS_FALLEN_BACK_TO_SMS` is no receipt: the SMS leg's own
 * TEXT_DELIVERED for the same message settles it (aws-events.ts).
 *
 * Receipts come from the configuration set's SNS event destination (functions/entries/snsReceipt.ts), never over HTTP:
 * `parseReceipt` refuses every callback, so `POST /v2/Callbacks/aws-sms` cannot forge one.
 */
export interface AwsSmsOptions {
  /** Phone number, sender id, pool (id or ARN) for `sms`. */
  originationIdentity?: string;
  /** The RCS agent (id or ARN) for `rcs`, with no SMS fallback of AWS's own (see above). */
  rcsOriginationIdentity?: string;
  /** The configuration set whose event destination publishes the receipts to SNS. */
  configurationSetName?: string;
  protectConfigurationId?: string;
  /** Max price per message part, USD as AWS takes it (e.g. "0.20"). */
  maxPrice?: string;
  /**
   * Per ISO country, the SMS template registered with that country's regulator (India's DLT): sent instead of
   * the service's message, with its ids in `DestinationCountryParameters` (registered-templates.ts).
   */
  registeredTemplates?: Readonly<Record<string, RegisteredSmsTemplate>>;
  /** A local simulator's endpoint; unset: the region's. */
  endpoint?: string;
  region?: string;
  /** A client built elsewhere (tests). */
  client?: PinpointSMSVoiceV2Client;
  now?: () => Date;
}

/**
 * The SDK module, run at the first send rather than with this module: the deliver function holds every sender,
 * and a deployment that does not use this one should not pay its client's set-up at each cold start. A
 * `require` in a function: esbuild bundles the module but runs it only when called (a top-level import would run
 * it with the bundle); `import()` would do the same, asynchronously. test/slow/bundles.test.ts checks it.
 */
const loadSmsClient = (): typeof import('@aws-sdk/client-pinpoint-sms-voice-v2') =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
  require('@aws-sdk/client-pinpoint-sms-voice-v2') as typeof import('@aws-sdk/client-pinpoint-sms-voice-v2');

/** SendTextMessage's TimeToLive bounds, in seconds. */
const MIN_TTL_SECONDS = 5;
const MAX_TTL_SECONDS = 259_200;

/**
 * Refusals that are about the destination number, not about us or AWS: a rejection of the number
 * (ConflictExceptionReason). Opted out: the number sent STOP. Blocked by a protect-number override: the operator
 * blocked this very number in its protect configuration. `DESTINATION_PHONE_NUMBER_NOT_VERIFIED` is not one: it
 * is the account's SMS sandbox refusing every unverified number (aws-errors.ts makes it a ProviderError).
 */
const NUMBER_REFUSALS = new Set([
  'DESTINATION_PHONE_NUMBER_OPTED_OUT',
  'DESTINATION_PHONE_NUMBER_BLOCKED_BY_PROTECT_NUMBER_OVERRIDE',
]);

export class AwsSmsProvider implements Provider {
  readonly name = AWS_SMS_PROVIDER_NAME;
  private client: PinpointSMSVoiceV2Client | undefined;

  constructor(private readonly options: AwsSmsOptions) {
    this.client = options.client;
  }

  /** The request for one message (exported for the tests' reading; the wire format is tested through the SDK). */
  request(message: OutboundMessage): SendTextMessageCommandInput {
    const identity =
      message.channel === 'rcs' ? this.options.rcsOriginationIdentity : this.options.originationIdentity;
    if (message.channel !== 'sms' && message.channel !== 'rcs')
      throw new Error(`aws-sms does not carry ${message.channel}`);
    if (!identity) throw new Error(`aws-sms has no origination identity for ${message.channel}`);
    if (!message.expiresAt) throw new Error('aws-sms needs the code expiry for the message TTL');
    const remaining = Math.floor(
      (Date.parse(message.expiresAt) - (this.options.now?.() ?? new Date()).getTime()) / 1000,
    );
    if (!(remaining >= MIN_TTL_SECONDS))
      throw new Error(`The code expires in ${remaining} s: too soon to send`);
    // RCS is no carrier SMS: the registered-template rules are the SMS regulators'.
    const registered =
      message.channel === 'sms' && message.country !== undefined
        ? this.options.registeredTemplates?.[message.country]
        : undefined;
    return {
      DestinationPhoneNumber: message.to,
      OriginationIdentity: identity,
      MessageBody: registered ? renderRegistered(registered, message.code) : message.body,
      ...(registered && { DestinationCountryParameters: registered.parameters }),
      MessageType: 'TRANSACTIONAL',
      TimeToLive: Math.min(remaining, MAX_TTL_SECONDS),
      Context: { [REFERENCE_CONTEXT_KEY]: message.reference },
      ...(this.options.configurationSetName && { ConfigurationSetName: this.options.configurationSetName }),
      ...(this.options.protectConfigurationId && {
        ProtectConfigurationId: this.options.protectConfigurationId,
      }),
      ...(this.options.maxPrice && { MaxPrice: this.options.maxPrice }),
    };
  }

  private smsClient(sdk: ReturnType<typeof loadSmsClient>): PinpointSMSVoiceV2Client {
    this.client ??= new sdk.PinpointSMSVoiceV2Client({
      ...(this.options.endpoint && { endpoint: this.options.endpoint }),
      ...(this.options.region && { region: this.options.region }),
      ...awsClientConfig('@aws-sdk/client-pinpoint-sms-voice-v2'),
    });
    return this.client;
  }

  /** Whether a country has a registered template (India's DLT) in this deployment's settings. */
  hasRegisteredTemplate(country: string): boolean {
    return this.options.registeredTemplates?.[country] !== undefined;
  }

  /**
   * The request a send of `message` would make, with `DryRun`: AWS checks it (the model, the grants, the
   * identity for the destination) and sends nothing, free of charge (the model's DryRun). AWS's own error is
   * thrown as the SDK gives it, for the operator to read.
   */
  async dryRun(message: OutboundMessage): Promise<string | undefined> {
    const sdk = loadSmsClient();
    const output = await this.smsClient(sdk).send(
      new sdk.SendTextMessageCommand({ ...this.request(message), DryRun: true }),
    );
    return output.MessageId;
  }

  async send(message: OutboundMessage): Promise<ProviderAnswer> {
    const input = this.request(message);
    const sdk = loadSmsClient();
    let output;
    try {
      output = await this.smsClient(sdk).send(new sdk.SendTextMessageCommand(input));
    } catch (error) {
      // Throttling, AWS errors and our own misconfiguration (no permission, unknown pool, the sandbox, MaxPrice)
      // are thrown: the workflow moves on without holding them against the number.
      const reason = (error as { Reason?: unknown }).Reason;
      if (typeof reason === 'string' && NUMBER_REFUSALS.has(reason)) return { status: 'rejected', reason };
      throw awsProviderError(error);
    }
    if (!output.MessageId) throw new ProviderError('provider_error', 'SendTextMessage answered no MessageId');
    return { status: 'accepted', messageId: output.MessageId };
  }

  minimumLifeSeconds(): number {
    return MIN_TTL_SECONDS;
  }

  parseReceipt(): undefined {
    return undefined;
  }
}
