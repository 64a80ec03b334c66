/**
 * Receipts that come as AWS events, not HTTP callbacks: the SNS notifications of the SMS configuration set's event
 * destination and of the WhatsApp Business Account's event destination, and EventBridge events. They are
 * believed because only SNS (a subscription with the topic's ARN as `SourceArn`) or the EventBridge rule may invoke
 * these functions (their resource policies, CDK); the same forward-only rules as every receipt then apply
 * (acceptProviderReceipt).
 */
import type { EventBridgeEvent, SNSEvent } from 'aws-lambda';
import { acceptProviderReceipt, type DeliveryDeps, type ReceiptResult } from '../core/delivery';
import type { Logger } from '../adapters/logger';
import {
  parseAwsSnsMessage,
  parseEventBridgeEvent,
  type SmsSuccessfulMeans,
} from '../adapters/providers/aws-events';

export type EventReceiptDeps = Pick<DeliveryDeps, 'store' | 'providers' | 'clock' | 'metrics'> & {
  logger: Logger;
  smsSuccessfulMeans: SmsSuccessfulMeans;
};

/** Each record's receipts, applied one by one; an error (DynamoDB) is thrown so that SNS retries the batch. */
export function buildSnsReceiptHandler(deps: EventReceiptDeps) {
  return async (event: SNSEvent): Promise<ReceiptResult[]> => {
    const results: ReceiptResult[] = [];
    for (const record of event.Records ?? []) {
      const receipts = parseAwsSnsMessage(record.Sns?.Message ?? '', deps.smsSuccessfulMeans);
      if (receipts.length === 0) deps.logger.log('info', 'receipt', { source: 'sns', result: 'ignored' });
      for (const { provider, receipt } of receipts) {
        const result = await acceptProviderReceipt(deps, provider, receipt);
        deps.logger.log('info', 'receipt', { source: 'sns', provider, result });
        results.push(result);
      }
    }
    return results;
  };
}

export function buildEventBridgeReceiptHandler(deps: EventReceiptDeps) {
  return async (event: EventBridgeEvent<string, unknown>): Promise<ReceiptResult | 'ignored'> => {
    const parsed = parseEventBridgeEvent(event, deps.smsSuccessfulMeans);
    if (!parsed) {
      deps.logger.log('info', 'receipt', { source: 'eventbridge', result: 'ignored' });
      return 'ignored';
    }
    const result = await acceptProviderReceipt(deps, parsed.provider, parsed.receipt);
    deps.logger.log('info', 'receipt', { source: 'eventbridge', provider: parsed.provider, result });
    return result;
  };
}
