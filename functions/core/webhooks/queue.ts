import type { WebhookEventType } from './events';

/** Work for the webhook sender, carried by a queue (SQS on AWS, in-process locally). */
export type WebhookJob =
  | {
      kind: 'deliver';
      serviceSid: string;
      endpointSid: string;
      eventId: string;
      eventType: WebhookEventType;
      /** The exact body to post and sign (the serialised WebhookEvent). */
      payload: string;
      /** 1 for the first try. */
      attempt: number;
      /** The endpoint's `disableCount` when the event was queued (absent: 0); another count drops the job. */
      endpointDisableCount?: number;
      /** Set when the wait is longer than the queue can delay a message: not to be tried before this time. */
      notBefore?: string;
    }
  | {
      /**
       * Writes EXPIRED back when the code's lifetime ends, so `verification.expired` fires then (spec 3: "may
       * appear up to a minute after expires_at"), not only at the next check.
       */
      kind: 'expire';
      serviceSid: string;
      verificationSid: string;
      expiresAt: string;
    };

export interface QueuedJob {
  job: WebhookJob;
  /** Seconds before the job is handed to the sender; may be fractional (the local queue), SQS rounds up. */
  delaySeconds: number;
}

export interface WebhookQueue {
  /** The longest delay one message can have (SQS: 900 s); longer waits hop through `notBefore`. */
  readonly maxDelaySeconds: number;
  enqueue(jobs: QueuedJob[]): Promise<void>;
  /** Keeps a job whose retries are exhausted, for an operator (the dead-letter queue on AWS). */
  deadLetter(job: WebhookJob, reason: string): Promise<void>;
}

/** A job due at `due`: delayed as far as the queue allows, with `notBefore` when it must hop again. */
export function scheduleAt(queue: WebhookQueue, job: WebhookJob, due: Date, now: Date): QueuedJob {
  const wait = Math.max(0, (due.getTime() - now.getTime()) / 1000);
  if (job.kind === 'expire') return { job, delaySeconds: Math.min(wait, queue.maxDelaySeconds) };
  const { notBefore: _previous, ...rest } = job;
  if (wait <= queue.maxDelaySeconds) return { job: rest, delaySeconds: wait };
  return { job: { ...rest, notBefore: due.toISOString() }, delaySeconds: queue.maxDelaySeconds };
}
