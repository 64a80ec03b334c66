import { SendWhatsAppMessageCommand, SocialMessagingClient } from '@aws-sdk/client-socialmessaging';
import type { OutboundMessage, Provider, ProviderAnswer } from '../../core/providers';
import { AWS_WHATSAPP_PROVIDER_NAME } from './aws-events';

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

/** Meta's bounds for an authentication template's `message_send_ttl_seconds`. */
const MIN_TTL_SECONDS = 30;
const MAX_TTL_SECONDS = 900;
export const DEFAULT_META_API_VERSION = 'v20.0';
export const DEFAULT_TEMPLATE_LANGUAGE = 'en_US';

/** The code in a rendered message: the verification code is the run of 4 to 10 digits in it. */
export function codeIn(body: string): string {
  const match = /\b(\d{4,10})\b/.exec(body);
  if (!match) throw new Error('No code in the message body');
  return match[1]!;
}

/**
 * A WhatsApp Cloud API authentication-template message: the code fills the body's one parameter and the
 * copy-code (URL-type) button's; `biz_opaque_callback_data` comes back with every status (our reference).
 */
export function authenticationTemplateMessage(options: {
  to: string;
  code: string;
  templateName: string;
  language: string;
  ttlSeconds: number;
  reference: string;
}): Record<string, unknown> {
  return {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: options.to,
    type: 'template',
    biz_opaque_callback_data: options.reference,
    template: {
      name: options.templateName,
      language: { code: options.language },
      message_send_ttl_seconds: options.ttlSeconds,
      components: [
        { type: 'body', parameters: [{ type: 'text', text: options.code }] },
        { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: options.code }] },
      ],
    },
  };
}

/** The TTL of a WhatsApp authentication message: the code's remaining life, within Meta's 30–900 s. */
export function whatsappTtlSeconds(expiresAt: string | undefined, now: Date): number {
  if (!expiresAt) throw new Error('WhatsApp needs the code expiry for the message TTL');
  const remaining = Math.floor((Date.parse(expiresAt) - now.getTime()) / 1000);
  if (!(remaining >= MIN_TTL_SECONDS))
    throw new Error(`The code expires in ${remaining} s, below WhatsApp's ${MIN_TTL_SECONDS} s minimum`);
  return Math.min(remaining, MAX_TTL_SECONDS);
}

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
    const payload = authenticationTemplateMessage({
      to: message.to,
      code: codeIn(message.body),
      templateName,
      language: this.options.templateLanguage ?? DEFAULT_TEMPLATE_LANGUAGE,
      ttlSeconds: whatsappTtlSeconds(message.expiresAt, this.options.now?.() ?? new Date()),
      reference: message.reference,
    });
    this.client ??= new SocialMessagingClient({
      ...(this.options.endpoint && { endpoint: this.options.endpoint }),
      ...(this.options.region && { region: this.options.region }),
      maxAttempts: 1,
    });
    // Errors (throttling, a template not approved, no permission) are thrown: WhatsApp tells about the number
    // only later, in a `failed` status (a failure receipt), so there is no synchronous rejection here.
    const output = await this.client.send(
      new SendWhatsAppMessageCommand({
        originationPhoneNumberId,
        metaApiVersion: this.options.metaApiVersion ?? DEFAULT_META_API_VERSION,
        message: Buffer.from(JSON.stringify(payload), 'utf8'),
      }),
    );
    if (!output.messageId) throw new Error('SendWhatsAppMessage answered no messageId');
    return { status: 'accepted', messageId: output.messageId };
  }

  parseReceipt(): undefined {
    return undefined;
  }
}
