import type { SocialMessagingClient } from '@aws-sdk/client-socialmessaging';
import type { OutboundMessage, Provider, ProviderAnswer } from '../../core/providers';
import { AWS_WHATSAPP_PROVIDER_NAME } from './aws-events';
import { awsClientConfig } from '../aws-client-config';
import { awsProviderError } from './aws-errors';
import {
  DEFAULT_META_API_VERSION,
  DEFAULT_TEMPLATE_LANGUAGE,
  WHATSAPP_MIN_TTL_SECONDS,
  assertWhatsAppSendable,
  authenticationTemplateMessage,
} from './whatsapp-template';

/**
 * AWS End User Messaging Social (`SendWhatsAppMessage`) for `whatsapp`: the message is a WhatsApp Cloud API
 * authentication-template message (the code in the body and in the copy-code button), sent from the linked
 * phone number; AWS holds the link to Meta, so no Meta token reaches our code. Receipts come from the WhatsApp
 * Business Account's SNS event destination (aws-events.ts), never over HTTP.
 */
export interface AwsWhatsAppOptions {
  /** The linked phone number's id (`phone-number-id-...`) or ARN. */
  originationPhoneNumberId?: string;
  /** The approved authentication template (category AUTHENTICATION, copy-code button). */
  templateName?: string;
  templateLanguage?: string;
  metaApiVersion?: string;
  endpoint?: string;
  region?: string;
  client?: SocialMessagingClient;
  now?: () => Date;
}

/**
 * The SDK module, run at the first send rather than with this module, as aws-sms.ts does and for the same reason:
 * every cold start of the deliver function would pay its set-up otherwise.
 */
const loadSocialMessagingClient = (): typeof import('@aws-sdk/client-socialmessaging') =>
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
  require('@aws-sdk/client-socialmessaging') as typeof import('@aws-sdk/client-socialmessaging');

export class AwsWhatsAppProvider implements Provider {
  readonly name = AWS_WHATSAPP_PROVIDER_NAME;
  private client: SocialMessagingClient | undefined;

  constructor(private readonly options: AwsWhatsAppOptions) {
    this.client = options.client;
  }

  async send(message: OutboundMessage): Promise<ProviderAnswer> {
    const { originationPhoneNumberId, templateName } = this.options;
    if (message.channel !== 'whatsapp') throw new Error(`aws-whatsapp does not carry ${message.channel}`);
    if (!originationPhoneNumberId || !templateName)
      throw new Error('aws-whatsapp needs a phone number id and a template name');
    assertWhatsAppSendable(message.expiresAt, this.options.now?.() ?? new Date());
    const payload = authenticationTemplateMessage({
      to: message.to,
      code: message.code,
      templateName,
      language: this.options.templateLanguage ?? DEFAULT_TEMPLATE_LANGUAGE,
      reference: message.reference,
    });
    const sdk = loadSocialMessagingClient();
    const client = this.socialClient(sdk);
    // Errors (throttling, a template not approved, no permission) are thrown: WhatsApp tells about the number
    // only later, in a `failed` status (a failure receipt), so there is no synchronous rejection here.
    let output;
    try {
      output = await client.send(
        new sdk.SendWhatsAppMessageCommand({
          originationPhoneNumberId,
          metaApiVersion: this.options.metaApiVersion ?? DEFAULT_META_API_VERSION,
          message: Buffer.from(JSON.stringify(payload), 'utf8'),
        }),
      );
    } catch (error) {
      throw awsProviderError(error);
    }
    if (!output.messageId) throw new Error('SendWhatsAppMessage answered no messageId');
    return { status: 'accepted', messageId: output.messageId };
  }

  private socialClient(sdk: ReturnType<typeof loadSocialMessagingClient>): SocialMessagingClient {
    this.client ??= new sdk.SocialMessagingClient({
      ...(this.options.endpoint && { endpoint: this.options.endpoint }),
      ...(this.options.region && { region: this.options.region }),
      ...awsClientConfig('@aws-sdk/client-socialmessaging'),
    });
    return this.client;
  }

  /**
   * GetLinkedWhatsAppBusinessAccountPhoneNumber of the configured phone number: a read that sends nothing. The
   * stack grants it in the same statement and on the same ARN as SendWhatsAppMessage, so a wrong ARN fails it
   * as it fails every send. AWS's own error is thrown as the SDK gives it. Answers the number's display form.
   */
  async linkedPhoneNumber(): Promise<string> {
    const { originationPhoneNumberId } = this.options;
    if (!originationPhoneNumberId) throw new Error('aws-whatsapp needs a phone number id');
    const sdk = loadSocialMessagingClient();
    const output = await this.socialClient(sdk).send(
      new sdk.GetLinkedWhatsAppBusinessAccountPhoneNumberCommand({ id: originationPhoneNumberId }),
    );
    const number = output.phoneNumber;
    return [number?.displayPhoneNumber ?? number?.phoneNumber, output.linkedWhatsAppBusinessAccountId]
      .filter(Boolean)
      .join(', WhatsApp Business Account ');
  }

  minimumLifeSeconds(): number {
    return WHATSAPP_MIN_TTL_SECONDS;
  }

  parseReceipt(): undefined {
    return undefined;
  }
}
