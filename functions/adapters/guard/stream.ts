/**
 * The table's stream as guard events: a new verification is an accepted send (with the guard's shadow decision,
 * if any), a verification that became VERIFIED a checked code, one that became DELIVERED a receipt, a number log
 * that gained a guard decision a send the guard refused. Every other record is not the guard's.
 */
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { streamImages } from '../dynamodb/stream-images';
import {
  consumeGuardEvents,
  consumeGuardWindowBatch,
  type GuardConsumerDeps,
  type PositionedGuardEvent,
} from '../../core/guard/consumer';
import { capReachedBy } from '../../core/guard/caps';
import { acceptedSendEvent, outcomeWeighed } from '../../core/guard/events';
import { METRIC, type Metrics } from '../../core/metrics';
import type { GuardEvent } from '../../core/guard/aggregates';
import { settledStatus } from '../../core/verification';
import { GuardItemTooLargeError, type OversizedGuardItem } from '../dynamodb/guard';
import { guardDecisionFromItem, verificationFromItem } from '../dynamodb/items';
import { PARTITION_FAMILY } from '../dynamodb/keys';
import type { Logger } from '../logger';

export function guardEventFromStreamRecord(record: DynamoDBRecord): GuardEvent | undefined {
  const images = streamImages(record);
  if (!images) return undefined;
  const { after, before } = images;

  if (after.type === 'verification') {
    const verification = verificationFromItem(after);
    if (!before) return acceptedSendEvent(verification);
    if (!outcomeWeighed(verification)) return undefined;
    const common = {
      serviceSid: verification.serviceSid,
      e164: verification.to,
      country: verification.country,
    };
    const sentAt = Date.parse(verification.dateCreated);
    const previous = verificationFromItem(before);
    const at = typeof after.event_at === 'string' ? Date.parse(after.event_at) : sentAt;
    if (settledStatus(previous) !== 'VERIFIED' && settledStatus(verification) === 'VERIFIED')
      return {
        kind: 'conversion',
        ...common,
        at,
        sentAt,
        ...(verification.guard?.mode === 'known' && { known: true as const }),
      };
    if (previous.deliveryStatus !== 'DELIVERED' && verification.deliveryStatus === 'DELIVERED')
      return { kind: 'delivered', ...common, at, sentAt };
    return undefined;
  }

  if (typeof after.pk === 'string' && after.pk.startsWith(PARTITION_FAMILY.number) && after.guard) {
    const decision = guardDecisionFromItem(after.guard as Record<string, unknown>);
    const previous = before?.guard as { at?: number } | undefined;
    if (previous?.at === decision.at || !decision.serviceSid || !decision.country) return undefined;
    const { serviceSid, country, callerCode, ...rest } = decision;
    return {
      kind: 'send',
      serviceSid,
      country,
      e164: after.pk.slice(PARTITION_FAMILY.number.length),
      at: decision.at,
      accepted: false,
      decision: rest,
      ...(callerCode && { callerCode }),
    };
  }
  return undefined;
}

export const guardEventsFromStream = (records: DynamoDBRecord[]): GuardEvent[] =>
  records.map(guardEventFromStreamRecord).filter((event): event is GuardEvent => event !== undefined);

/**
 * The events of one batch read from one shard, each with its record's position when the shard is known (Lambda
 * names it only with a tumbling window: `shardId`), so that the consumer folds each record once.
 */
function guardEventsFromShard(records: DynamoDBRecord[], shard: string | undefined): PositionedGuardEvent[] {
  const events: PositionedGuardEvent[] = [];
  for (const record of records) {
    const event = guardEventFromStreamRecord(record);
    if (!event) continue;
    const sequence = record.dynamodb?.SequenceNumber;
    events.push(shard && sequence ? { ...event, position: { shard, sequence } } : event);
  }
  return events;
}

/**
 * A batch of one shard. With a tumbling window on the event source (lib/constructs/guard-signals.ts) Lambda
 * names the shard (`shardId`) and the window, passes the `state` the window's previous batch answered, and says
 * which batch is the window's last; the consumer carries there the events whose aggregates wait
 * (`consumeGuardWindowBatch`). Lambda keeps a window's state up to 1 MB: `DEFERRED_AGGREGATES` keeps it well
 * under (a thousand events of a few hundred bytes).
 */
export type GuardStreamEvent = DynamoDBStreamEvent & {
  shardId?: string;
  window?: { start: string; end: string };
  state?: GuardWindowState | Record<string, never>;
  isFinalInvokeForWindow?: boolean;
  isWindowTerminatedEarly?: boolean;
};
export interface GuardWindowState {
  /** The window's events folded but not written yet. */
  carried?: PositionedGuardEvent[];
}
export interface GuardStreamResponse {
  state: GuardWindowState;
}

/** Where the consumer tells of its own failures (a metric the alarms read, a log line). */
export interface GuardStreamHealth {
  metrics?: Metrics;
  logger?: Logger;
}

/** Why a batch failed, as its log line says it: an aggregate too large for DynamoDB, or anything else. */
function batchFailureCause(error: unknown): 'item_too_large' | 'error' {
  if (error instanceof GuardItemTooLargeError) return 'item_too_large';
  const message = error instanceof Error ? error.message : String(error);
  return /item size has exceeded|item size to update has exceeded/i.test(message)
    ? 'item_too_large'
    : 'error';
}

/**
 * The guard's stream handler (the GuardSignals Lambda, functions/entries/guardSignals.ts; the local stack's poller,
 * local/guard.ts): the batch's events with their positions, folded once each. A failure is counted
 * (`GuardBatchFailures`) and thrown: the batch is delivered again, and after the event source's retries dropped
 * (its on-failure queue, alarmed): the signals it carried are lost.
 */
export async function handleGuardStream(
  deps: GuardConsumerDeps,
  event: GuardStreamEvent,
  health: GuardStreamHealth = {},
): Promise<GuardStreamResponse> {
  let carry: PositionedGuardEvent[] = [];
  try {
    const events = guardEventsFromShard(event.Records ?? [], event.shardId);
    // Without a window (the shard unnamed, the local stack's poller), every batch is written.
    if (event.window && event.shardId) {
      const carried = (event.state as GuardWindowState | undefined)?.carried ?? [];
      const final = event.isFinalInvokeForWindow === true || event.isWindowTerminatedEarly === true;
      carry = (await consumeGuardWindowBatch(deps, carried, events, final)).carry;
    } else await consumeGuardEvents(deps, events);
  } catch (error) {
    const cause = batchFailureCause(error);
    health.metrics?.count(METRIC.guardBatchFailures);
    health.logger?.log('error', 'guard.batch_failed', {
      cause,
      records: (event.Records ?? []).length,
      error: error instanceof Error ? error : String(error),
    });
    throw error;
  }
  return { state: carry.length > 0 ? { carried: carry } : {} };
}

/** Tells of a guard item written past its budget: a metric (alarmed) and a log line naming the item. */
export const reportOverBudget =
  (logger: Logger, metrics?: Metrics) =>
  (item: OversizedGuardItem): void => {
    metrics?.count(METRIC.guardItemsOverBudget);
    logger.log('warn', 'guard.item_over_budget', {
      pk: item.pk,
      sk: item.sk,
      kind: item.kind,
      bytes: item.bytes,
    });
  };

/**
 * Tells the owner of a conversion drop the guard refused nothing for (a slow attack, or codes not arriving): a
 * metric (alarmed) and a log line with the figures.
 */
export const reportConversionDrop =
  (logger: Logger, metrics?: Metrics): NonNullable<GuardConsumerDeps['onConversionDrop']> =>
  (scope, country, figures) => {
    metrics?.count(METRIC.guardConversionDrops);
    logger.log('warn', 'guard.conversion_drop', { scope, country, figures: JSON.stringify(figures) });
  };

/** Tells the owner of an attack when it starts: a metric (alarm on it) and a log line with the figures. */
export const reportBlockStarted =
  (logger: Logger, metrics?: Metrics): NonNullable<GuardConsumerDeps['onBlockStarted']> =>
  (scope, country, block) => {
    metrics?.count(METRIC.guardBlocks, { reason: block.reason, level: block.level });
    const cap = capReachedBy(block);
    if (cap) metrics?.count(METRIC.guardCapsReached, { cap: cap.cap });
    logger.log('warn', 'guard.block_started', {
      scope,
      country,
      reason: block.reason,
      prefix: block.prefix,
      guardLevel: block.level,
      figures: JSON.stringify(block.figures),
    });
  };
