/**
 * Receipts of the AWS providers, parsed from the events AWS publishes (no SDK here: the receipt functions load
 * none). They are authenticated by how they arrive, not by a signature: an SNS topic subscription or an
 * EventBridge rule is the only thing allowed to invoke the receipt functions (their resource policies, CDK).
 */
import type { Receipt } from '../../core/providers';
import { isObject, isOptionalText, isText } from '../shape';

export const AWS_SMS_PROVIDER_NAME = 'aws-sms';
export const AWS_WHATSAPP_PROVIDER_NAME = 'aws-whatsapp';

/** The key of our attempt reference in SendTextMessage's `Context`, which AWS copies into every event. */
export const REFERENCE_CONTEXT_KEY = 'otpReference';

/**
 * What `TEXT_SUCCESSFUL` ("accepted by the carrier") means here, `OTP_AWS_SMS_SUCCESSFUL_MEANS`. Default
 * `delivered`: AWS says TEXT_SUCCESSFUL and TEXT_DELIVERED are used interchangeably depending on the country, and
 * where no TEXT_DELIVERED ever follows, reading it as `accepted` would make every SMS there wait out the channel
 * and send the code again on the next channel (a second message, paid). The price of the default: a message the
 * carrier accepted but never delivered is not followed by our fallback (the customer can resend). `accepted`:
 * TEXT_SUCCESSFUL is no receipt; only TEXT_DELIVERED settles.
 */
export type SmsSuccessfulMeans = 'delivered' | 'accepted';
export const DEFAULT_SMS_SUCCESSFUL_MEANS: SmsSuccessfulMeans = 'delivered';

export const SMS_DELIVERED = new Set(['TEXT_DELIVERED', 'RCS_DELIVERED', 'RCS_READ']);
/** Final failures. Pending (TEXT_QUEUED, TEXT_PENDING, RCS_QUEUED, RCS_SENT) and RCS_FALLEN_BACK_TO_SMS: none. */
export const SMS_FAILED = new Set([
  'TEXT_BLOCKED',
  'TEXT_CARRIER_BLOCKED',
  'TEXT_CARRIER_UNREACHABLE',
  'TEXT_INVALID',
  'TEXT_INVALID_MESSAGE',
  'TEXT_UNREACHABLE',
  'TEXT_SPAM',
  'TEXT_UNKNOWN',
  'TEXT_TTL_EXPIRED',
  'TEXT_PROTECT_BLOCKED',
  'RCS_FAILED',
  'RCS_TTL_EXPIRED',
  'RCS_PROTECT_BLOCKED',
]);

/**
 * An AWS End User Messaging SMS event (the configuration set's SNS destination carries it as the notification's
 * `Message`; EventBridge, source `aws.sms-voice`, as `detail`), as a receipt: undefined when it is not final for
 * us, or carries no reference of ours.
 */
export function parseSmsEvent(
  event: unknown,
  successfulMeans: SmsSuccessfulMeans = DEFAULT_SMS_SUCCESSFUL_MEANS,
): Receipt | undefined {
  if (!isObject(event)) return undefined;
  const { eventType, messageId, context } = event;
  if (!isText(eventType, 100) || !isText(messageId, 200, 1)) return undefined;
  if (context !== undefined && !isObject(context)) return undefined;
  const reference = context?.[REFERENCE_CONTEXT_KEY];
  if (typeof reference !== 'string') return undefined;
  const delivered =
    SMS_DELIVERED.has(eventType) || (eventType === 'TEXT_SUCCESSFUL' && successfulMeans === 'delivered');
  if (delivered) return { reference, messageId, status: 'delivered' };
  if (SMS_FAILED.has(eventType)) return { reference, messageId, status: 'failed' };
  return undefined;
}

/**
 * WhatsApp statuses from Meta (`statuses[].status`): `delivered` and `read` settle, `failed` fails; `sent` is
 * no receipt (accepted by WhatsApp, not yet on the phone).
 */
const whatsappStatus = (status: string): Receipt['status'] | undefined =>
  status === 'delivered' || status === 'read' ? 'delivered' : status === 'failed' ? 'failed' : undefined;

/**
 * A receipt from an AWS event, whose message id may be missing: a WhatsApp status event carries AWS's message id
 * (what SendWhatsAppMessage answered) in its header only on some events; see parseWhatsAppSnsEvent.
 */
export type AwsEventReceipt = Omit<Receipt, 'messageId'> & { messageId: string | undefined };

/** Meta's statuses in a webhook entry (`changes[].value.statuses[]`); undefined when the entry is not of that shape. */
function statusesIn(entry: unknown): { status: string; reference: string | undefined }[] | undefined {
  if (!isObject(entry) || !Array.isArray(entry.changes) || entry.changes.length > 100) return undefined;
  const statuses: { status: string; reference: string | undefined }[] = [];
  for (const change of entry.changes as unknown[]) {
    if (!isObject(change)) return undefined;
    if (change.value === undefined) continue;
    if (!isObject(change.value)) return undefined;
    const listed = change.value.statuses;
    if (listed === undefined) continue;
    if (!Array.isArray(listed)) return undefined;
    for (const status of listed as unknown[]) {
      if (!isObject(status) || !isText(status.status, 50)) return undefined;
      if (!isOptionalText(status.biz_opaque_callback_data, 512)) return undefined;
      statuses.push({ status: status.status, reference: status.biz_opaque_callback_data });
    }
  }
  return statuses;
}

/**
 * A WhatsApp event from the WhatsApp Business Account's SNS event destination (AWS End User Messaging Social user
 * guide, "Message and event format"): the AWS header (`context`, `aws_account_id`, `message_timestamp`, and on
 * some events `messageId`, AWS's id of the message, the one SendWhatsAppMessage answered) and Meta's webhook
 * entry as a JSON string. Its `statuses[].id` is WhatsApp's own `wamid.…`, NOT the id SendWhatsAppMessage
 * answered, so it cannot name the attempt; the status's `biz_opaque_callback_data`, which Meta returns with every
 * status of the message, is our reference (aws-whatsapp.ts sets it), and finds the attempt. AWS's `messageId`,
 * when the header has it, must then equal the one recorded at send; without it the reference alone names the
 * attempt (the handler takes the recorded id). The EventBridge events of `aws.social-messaging` carry AWS's
 * message id and the status but no reference and no wamid, so they cannot be tied to an attempt without a
 * message-id index; the SNS destination is the receipt path for WhatsApp.
 */
export function parseWhatsAppSnsEvent(event: unknown): AwsEventReceipt[] {
  if (!isObject(event)) return [];
  const { messageId, whatsAppWebhookEntry } = event;
  // AWS's message id, on some events only.
  if (!isOptionalText(messageId, 200) || messageId === '') return [];
  if (!isText(whatsAppWebhookEntry, 100_000)) return [];
  let entry: unknown;
  try {
    entry = JSON.parse(whatsAppWebhookEntry);
  } catch {
    return [];
  }
  return (statusesIn(entry) ?? []).flatMap(({ status, reference }): AwsEventReceipt[] => {
    const outcome = whatsappStatus(status);
    return outcome && reference ? [{ reference, messageId, status: outcome }] : [];
  });
}

/**
 * An EventBridge event: `aws.sms-voice` "Text Message Delivery Status Updated" (its detail is the SMS event, with
 * our context) → an aws-sms receipt. `aws.social-messaging` events are recognised but give none (see above).
 */
export function parseEventBridgeEvent(
  event: unknown,
  successfulMeans: SmsSuccessfulMeans = DEFAULT_SMS_SUCCESSFUL_MEANS,
): { provider: string; receipt: Receipt } | undefined {
  if (!isObject(event)) return undefined;
  if (event.source === 'aws.sms-voice' && event['detail-type'] === 'Text Message Delivery Status Updated') {
    const receipt = parseSmsEvent(event.detail, successfulMeans);
    return receipt && { provider: AWS_SMS_PROVIDER_NAME, receipt };
  }
  return undefined;
}

/** An SNS notification's `Message` from either AWS provider's event destination, as receipts. */
export function parseAwsSnsMessage(
  message: string,
  successfulMeans: SmsSuccessfulMeans = DEFAULT_SMS_SUCCESSFUL_MEANS,
): { provider: string; receipt: AwsEventReceipt }[] {
  let event: unknown;
  try {
    event = JSON.parse(message);
  } catch {
    return [];
  }
  if (typeof event === 'object' && event !== null && 'whatsAppWebhookEntry' in event) {
    return parseWhatsAppSnsEvent(event).map((receipt) => ({ provider: AWS_WHATSAPP_PROVIDER_NAME, receipt }));
  }
  const receipt = parseSmsEvent(event, successfulMeans);
  return receipt ? [{ provider: AWS_SMS_PROVIDER_NAME, receipt }] : [];
}
