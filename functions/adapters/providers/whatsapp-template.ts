/**
 * The WhatsApp authentication-template message (WhatsApp Cloud API JSON), shared by aws-whatsapp and Vonage's
 * WhatsApp channel. No SDK here: Vonage's module (loaded by every function) imports it.
 */
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
