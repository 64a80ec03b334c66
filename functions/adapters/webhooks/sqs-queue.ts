import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { awsClientConfig } from '../aws-client-config';
// From the modules, not the index (which also brings the URL policy and ipaddr.js into the events bundle).
import { WEBHOOK_EVENT_TYPES } from '../../core/webhooks/events';
import type { QueuedJob, WebhookJob, WebhookQueue } from '../../core/webhooks/queue';
import { runWebhookJob, type WebhookJobOutcome, type WebhookSenderDeps } from '../../core/webhooks/sender';
import { METRIC, noMetrics, type Metrics } from '../../core/metrics';
import type { Logger } from '../logger';
import { isObject, isOneOf, isOptionalText, isText } from '../shape';

/** SQS delays one message by at most 15 minutes; longer waits hop with `notBefore`. */
export const SQS_MAX_DELAY_SECONDS = 900;
const SQS_BATCH_LIMIT = 10;

/**
 * The webhook queue on AWS. A retry is a new message delayed by the schedule (the attempt number and, past 15
 * minutes, `notBefore` ride in the body), so the schedule can span more than a day, past SQS's 12-hour
 * visibility limit. Jobs whose retries are exhausted go to the dead-letter queue, which also receives messages
 * the sender kept failing on (the redrive policy).
 */
export class SqsWebhookQueue implements WebhookQueue {
  readonly maxDelaySeconds = SQS_MAX_DELAY_SECONDS;

  constructor(
    private readonly queueUrl: string,
    private readonly deadLetterQueueUrl: string | undefined,
    private readonly client = new SQSClient({ ...awsClientConfig('@aws-sdk/client-sqs') }),
  ) {}

  async enqueue(jobs: QueuedJob[]): Promise<void> {
    for (let start = 0; start < jobs.length; start += SQS_BATCH_LIMIT) {
      const chunk = jobs.slice(start, start + SQS_BATCH_LIMIT);
      const result = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map(({ job, delaySeconds }, index) => ({
            Id: String(index),
            MessageBody: JSON.stringify(job),
            DelaySeconds: Math.min(SQS_MAX_DELAY_SECONDS, Math.ceil(delaySeconds)),
          })),
        }),
      );
      // Throwing makes the caller's batch fail and be retried: a duplicate enqueue is harmless, a lost one is not.
      if (result.Failed && result.Failed.length > 0) {
        throw new Error(`SQS refused ${result.Failed.length} webhook job(s): ${result.Failed[0]?.Message}`);
      }
    }
  }

  async deadLetter(job: WebhookJob, reason: string): Promise<void> {
    if (!this.deadLetterQueueUrl) throw new Error('No dead-letter queue configured');
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.deadLetterQueueUrl,
        MessageBody: JSON.stringify({ job, reason, at: new Date().toISOString() }),
      }),
    );
  }
}

/** A queue message's job (thrown when it is not one: the message is retried, then dead-lettered). */
export function parseWebhookJob(body: string): WebhookJob {
  const job: unknown = JSON.parse(body);
  if (isObject(job) && job.kind === 'deliver') {
    const { serviceSid, endpointSid, eventId, eventType, payload, attempt, endpointDisableCount, notBefore } =
      job;
    if (
      isText(serviceSid) &&
      isText(endpointSid) &&
      isText(eventId) &&
      isOneOf(WEBHOOK_EVENT_TYPES, eventType) &&
      isText(payload) &&
      Number.isSafeInteger(attempt) &&
      (attempt as number) >= 1 &&
      (endpointDisableCount === undefined || Number.isSafeInteger(endpointDisableCount)) &&
      isOptionalText(notBefore)
    ) {
      return {
        kind: 'deliver',
        serviceSid,
        endpointSid,
        eventId,
        eventType,
        payload,
        attempt: attempt as number,
        ...(endpointDisableCount !== undefined && { endpointDisableCount: endpointDisableCount as number }),
        ...(notBefore !== undefined && { notBefore }),
      };
    }
  }
  if (isObject(job) && job.kind === 'expire') {
    const { serviceSid, verificationSid, expiresAt } = job;
    if (isText(serviceSid) && isText(verificationSid) && isText(expiresAt))
      return { kind: 'expire', serviceSid, verificationSid, expiresAt };
  }
  throw new Error('The queue message is not a webhook job');
}

/**
 * The sender function's batch, through Powertools' partial-batch processor: every job at once (a slow endpoint
 * delays nobody else's job beyond its own time limit); a job that threw is reported so SQS delivers that
 * message again, the others are deleted. A batch whose every job threw is reported whole too (no throw), as
 * before. Failed attempts count as `WebhookFailures` (outcome `retry`, `dead`, or `error` for a job that threw).
 */
export async function handleWebhookQueueBatch(
  deps: WebhookSenderDeps,
  event: SQSEvent,
  logger: Logger,
  metrics: Metrics = noMetrics,
): Promise<SQSBatchResponse> {
  const processor = new BatchProcessor(EventType.SQS);
  const response = await processPartialResponse(
    event,
    async (record: SQSRecord) => {
      try {
        const job = parseWebhookJob(record.body);
        const outcome = await runWebhookJob(deps, job);
        logJob(logger, job, outcome);
        if (outcome === 'retrying' || outcome === 'dead') {
          metrics.count(METRIC.webhookFailures, { outcome: outcome === 'dead' ? 'dead' : 'retry' });
        }
      } catch (error) {
        logger.log('error', 'webhook.job_failed', { messageId: record.messageId, error: String(error) });
        metrics.count(METRIC.webhookFailures, { outcome: 'error' });
        throw error;
      }
    },
    processor,
    { throwOnFullBatchFailure: false, processInParallel: true },
  );
  // In the batch's order (the processor lists them as they fail), so a report reads like the batch.
  const order = new Map(event.Records.map((record, index) => [record.messageId, index]));
  const byOrder = (item: { itemIdentifier: string }) => order.get(item.itemIdentifier) ?? 0;
  return { batchItemFailures: [...response.batchItemFailures].sort((a, b) => byOrder(a) - byOrder(b)) };
}

/** One line per job; `webhook.dead` lines are what an operator looks for beside the dead-letter alarm. */
export function logJob(logger: Logger, job: WebhookJob, outcome: WebhookJobOutcome): void {
  if (job.kind === 'expire') {
    logger.log('info', 'webhook.expiry', { sid: job.verificationSid, outcome });
    return;
  }
  logger.log(outcome === 'dead' ? 'warn' : 'info', `webhook.${outcome}`, {
    eventId: job.eventId,
    eventType: job.eventType,
    serviceSid: job.serviceSid,
    endpointSid: job.endpointSid,
    attempt: job.attempt,
  });
}
