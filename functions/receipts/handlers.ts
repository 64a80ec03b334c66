/**
 * Receipts that come as AWS events, not HTTP callbacks: the SNS notifications of the SMS configuration set's event
 * destination and of the WhatsApp Business Account's event destination. They are believed because only SNS (a
 * subscription with the topic's ARN as `SourceArn`) may invoke this function (its resource policy, CDK); the same
 * forward-only rules as every receipt then apply (acceptProviderReceipt).
 */
import type { SNSEvent } from 'aws-lambda';
import { acceptProviderReceipt, type DeliveryDeps, type ReceiptResult } from '../core/delivery';
import { parseMessageReference, type Receipt } from '../core/providers';
import type { Logger } from '../adapters/logger';
import { parseAwsSnsMessage, type AwsEventReceipt } from '../adapters/providers/aws-events';

export type EventReceiptDeps = Pick<DeliveryDeps, 'store' | 'providers' | 'clock' | 'metrics'> & {
  logger: Logger;
};

/** Each record's receipts, applied one by one; an error (DynamoDB) is thrown so that SNS retries the batch. */
export function buildSnsReceiptHandler(deps: EventReceiptDeps) {
  return async (event: SNSEvent): Promise<ReceiptResult[]> => {
    const results: ReceiptResult[] = [];
    for (const record of event.Records ?? []) {
      const receipts = parseAwsSnsMessage(record.Sns?.Message ?? '');
      if (receipts.length === 0) deps.logger.log('info', 'receipt', { source: 'sns', result: 'ignored' });
      for (const { provider, receipt: parsed } of receipts) {
        const receipt = await withMessageId(deps, provider, parsed);
        const result = receipt ? await acceptProviderReceipt(deps, provider, receipt) : 'unknown';
        deps.logger.log('info', 'receipt', { source: 'sns', provider, result });
        results.push(result);
      }
    }
    return results;
  };
}

/**
 * A receipt that names its attempt by reference only (a WhatsApp status: see parseWhatsAppSnsEvent) is for the
 * message recorded on that attempt. The reference travelled in `biz_opaque_callback_data`, set on our message
 * alone and returned with its statuses, and the event came from AWS through the topic only AWS may publish to:
 * the same trust as a receipt that beats the send's own write (acceptProviderReceipt). No attempt, or one on
 * another provider's channel: unknown. An attempt still `sending` (no id recorded yet): acceptProviderReceipt
 * takes it by the channel's provider, as for every receipt.
 */
async function withMessageId(
  deps: Pick<EventReceiptDeps, 'store' | 'providers'>,
  provider: string,
  receipt: AwsEventReceipt,
): Promise<Receipt | undefined> {
  if (receipt.messageId !== undefined) return { ...receipt, messageId: receipt.messageId };
  const reference = parseMessageReference(receipt.reference);
  if (!reference) return undefined;
  const verification = await deps.store.getVerification(reference.sid);
  const attempt = verification?.deliveries[String(reference.channelIndex)];
  // Only an attempt this provider was to carry: a reference is never borrowed across providers.
  if (!attempt || deps.providers.forChannel(attempt.channel, verification!.country).name !== provider)
    return undefined;
  return { ...receipt, messageId: attempt.messageId ?? '' };
}
