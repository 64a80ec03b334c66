/**
 * The WhatsApp authentication-template message (WhatsApp Cloud API JSON), shared by aws-whatsapp and Vonage's
 * WhatsApp channel. No SDK here: Vonage's module (loaded by every function) imports it.
 */
/**
 * Meta's lower bound of an authentication template's time-to-live, `message_send_ttl_seconds` (30–900 s). That
 * TTL is a property of the template, set when it is created or updated (`POST …/message_templates`), not of a
 * message: Meta's "Configure message time-to-live" page. The operator sets it at or under the code's life
 * (docs/providers.md); a message carries none, and a code with less than the minimum left is not sent.
 */
export const WHATSAPP_MIN_TTL_SECONDS = 30;
/**
 * The Meta Graph API version SendWhatsAppMessage is asked for when the deployment names none. Meta serves v24.0
 * until 2028-02-18 (its versions changelog); synth refuses a retired one (lib/provider-config.ts).
 */
export const DEFAULT_META_API_VERSION = 'v24.0';
export const DEFAULT_TEMPLATE_LANGUAGE = 'en_US';

/**
 * A WhatsApp Cloud API authentication-template message: the code fills the body's one parameter and the
 * copy-code (URL-type) button's; `biz_opaque_callback_data` comes back with every status (our reference).
 */
export function authenticationTemplateMessage(options: {
  to: string;
  code: string;
  templateName: string;
  language: string;
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
      components: [
        { type: 'body', parameters: [{ type: 'text', text: options.code }] },
        { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: options.code }] },
      ],
    },
  };
}

/**
 * A WhatsApp authentication message is sent only with at least Meta's minimum TTL of the code's life left (the
 * template's own TTL, set by the operator, bounds its delivery); thrown otherwise.
 */
export function assertWhatsAppSendable(expiresAt: string | undefined, now: Date): void {
  if (!expiresAt) throw new Error('WhatsApp needs the code expiry');
  const remaining = Math.floor((Date.parse(expiresAt) - now.getTime()) / 1000);
  if (!(remaining >= WHATSAPP_MIN_TTL_SECONDS))
    throw new Error(
      `The code expires in ${remaining} s, below WhatsApp's ${WHATSAPP_MIN_TTL_SECONDS} s minimum`,
    );
}
