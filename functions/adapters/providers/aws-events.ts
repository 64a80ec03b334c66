/**
 * Receipts of the AWS providers, parsed from the events AWS publishes (no SDK here: the receipt functions load
 * none). They are authenticated by how they arrive, not by a signature: the SNS topic's subscription is the only
 * thing allowed to invoke the receipt function (its resource policy, CDK), and only AWS may publish to the topic.
 */
import type { Receipt } from '../../core/providers';
import { isObject, isOptionalText, isText } from '../shape';

export const AWS_SMS_PROVIDER_NAME = 'aws-sms';
export const AWS_WHATSAPP_PROVIDER_NAME = 'aws-whatsapp';

/** The key of our attempt reference in SendTextMessage's `Context`, which AWS copies into every event. */
export const REFERENCE_CONTEXT_KEY = 'otpReference';

/**
 * Only a final event settles an attempt. AWS marks every SMS and RCS event with `isFinal`; an intermediate one
 * (`isFinal: false`: a `TEXT_SUCCESSFUL` "accepted by the carrier" that a `TEXT_DELIVERED` or a failure may
 * follow, a temporary `TEXT_CARRIER_UNREACHABLE` the carrier retries) is no receipt: receipts only move an
 * attempt forward, so taking it would hide the failure that follows. A final `TEXT_SUCCESSFUL` is the last word
 * in countries whose carriers never report delivery (AWS uses the two "interchangeably depending on the
 * country"): it settles the attempt as delivered, so the code is not sent again on the next channel.
 */
export const SMS_SETTLED_ON_SUCCESS = 'TEXT_SUCCESSFUL';

export const SMS_DELIVERED = new Set(['TEXT_DELIVERED', 'RCS_DELIVERED', 'RCS_READ']);
/**
 * RCS's reports from the phone itself settle whatever `isFinal` says: only a read can follow a delivery, never a
 * failure, and AWS's pages do not say whether a delivery that a read receipt may follow is marked final. Waiting
 * for a final one there could leave every RCS code unsettled, and the next channel paid for.
 */
const RCS_FROM_THE_PHONE = new Set(['RCS_DELIVERED', 'RCS_READ']);
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
 * `Message`), as a receipt: undefined when it is not final for
 * us (not final, or a pending status), or carries no reference of ours.
 */
export function parseSmsEvent(event: unknown): Receipt | undefined {
  if (!isObject(event)) return undefined;
  const { eventType, messageId, context, isFinal } = event;
  if (!isText(eventType, 100) || !isText(messageId, 200, 1)) return undefined;
  if (isFinal !== true && !RCS_FROM_THE_PHONE.has(eventType)) return undefined;
  if (context !== undefined && !isObject(context)) return undefined;
  const reference = context?.[REFERENCE_CONTEXT_KEY];
  if (typeof reference !== 'string') return undefined;
  if (SMS_DELIVERED.has(eventType) || eventType === SMS_SETTLED_ON_SUCCESS)
    return { reference, messageId, status: 'delivered' };
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
 * A receipt from an AWS event that names its attempt by reference only: a WhatsApp status. The handler takes the
 * message id recorded on that attempt (functions/receipts/handlers.ts).
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
 * guide, "Message and event format"): the AWS header (`context`, `aws_account_id`, `message_timestamp`, on some
 * events `messageId`) and Meta's webhook entry as a JSON string. The attempt is named by the status's
 * `biz_opaque_callback_data`: our reference, set on the message (aws-whatsapp.ts) and returned by Meta with every
 * status of it. Nothing else can name it: `statuses[].id` is WhatsApp's own `wamid.…`, and no AWS document
 * promises that the header's `messageId` equals the id SendWhatsAppMessage answered, so it is not compared (a
 * mismatch would drop every receipt and send the code again on the next channel). The handler ties the status
 * to the attempt its reference names, on an aws-whatsapp channel only. AWS's EventBridge events of
 * `aws.social-messaging` carry its message id and the status but no reference and no wamid, so they could not be
 * tied to an attempt; the stack has no rule for them.
 */
function parseWhatsAppSnsEvent(event: unknown): AwsEventReceipt[] {
  if (!isObject(event)) return [];
  const { whatsAppWebhookEntry } = event;
  if (!isText(whatsAppWebhookEntry, 100_000)) return [];
  let entry: unknown;
  try {
    entry = JSON.parse(whatsAppWebhookEntry);
  } catch {
    return [];
  }
  return (statusesIn(entry) ?? []).flatMap(({ status, reference }): AwsEventReceipt[] => {
    const outcome = whatsappStatus(status);
    return outcome && reference ? [{ reference, messageId: undefined, status: outcome }] : [];
  });
}

/** An SNS notification's `Message` from either AWS provider's event destination, as receipts. */
export function parseAwsSnsMessage(message: string): { provider: string; receipt: AwsEventReceipt }[] {
  let event: unknown;
  try {
    event = JSON.parse(message);
  } catch {
    return [];
  }
  if (typeof event === 'object' && event !== null && 'whatsAppWebhookEntry' in event) {
    return parseWhatsAppSnsEvent(event).map((receipt) => ({ provider: AWS_WHATSAPP_PROVIDER_NAME, receipt }));
  }
  const receipt = parseSmsEvent(event);
  return receipt ? [{ provider: AWS_SMS_PROVIDER_NAME, receipt }] : [];
}
