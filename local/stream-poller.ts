/**
 * The local stand-in for Lambda's DynamoDB stream event source: reads DynamoDB Local's own change stream of the
 * table (the Streams API, as on AWS) and hands each batch, shaped as the Lambda event, to the same handler the
 * events function runs. Shards are read in order, a child shard after its parent (new shards are looked for
 * every few seconds); a shard whose read fails is reopened after its last record; a batch whose handler fails
 * is tried 4 times (the guard's event source on AWS: once and 3 retries), then skipped and logged (the
 * on-failure destination on AWS). With `filters`, the event source's filter criteria, only the records one of
 * them matches are handed over, and a read none of whose records match invokes nothing, as on AWS.
 */
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { Logger } from '../functions/adapters/logger';
import type { FilterPattern, FilterValue } from '../functions/adapters/dynamodb/stream-filters';

export interface StreamPollerOptions {
  endpoint: string;
  tableName: string;
  /** One batch of one shard (`shardId`: what Lambda names only with a tumbling window; the guard needs it). */
  handle: (event: DynamoDBStreamEvent, shardId: string) => Promise<unknown>;
  logger: Logger;
  /** Pause between reads of an idle shard. */
  intervalMs?: number;
  /**
   * Pause after every read but a full page (a backlog is read on at once), as Lambda's batching window gathers
   * records before it invokes: the handler gets fewer, larger batches. Off by default (read again at once while
   * records flow).
   */
  batching?: boolean;
  /** Attempts of a failing batch before it is skipped (Lambda: retry attempts of the event source). */
  maxAttempts?: number;
  /** The event source's filter criteria: a record passes when one matches it. None: every record passes. */
  filters?: readonly FilterPattern[];
}

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
/** Records per read (Lambda's default batch size for a stream). */
const PAGE_SIZE = 100;
/** How often the stream's shards are listed again, for shards opened since. */
const DISCOVERY_INTERVAL_MS = 2000;

export class StreamPoller {
  private readonly streams: DynamoDBStreamsClient;
  private readonly tables: DynamoDBClient;
  private streamArn = '';
  /** Open iterators by shard id. */
  private readonly iterators = new Map<string, string>();
  /** The last record read from each shard, to reopen it after an error without skipping or repeating. */
  private readonly lastSequence = new Map<string, string>();
  /** Every shard seen, open or finished. */
  private readonly known = new Set<string>();
  private readonly finished = new Set<string>();
  private lastDiscovery = 0;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: StreamPollerOptions) {
    const config = { endpoint: options.endpoint, region: 'local', credentials };
    this.streams = new DynamoDBStreamsClient(config);
    this.tables = new DynamoDBClient(config);
  }

  /** Starts at the stream's tip (like StartingPosition LATEST): changes from now on, none skipped after. */
  async start(): Promise<void> {
    const { Table } = await this.tables.send(new DescribeTableCommand({ TableName: this.options.tableName }));
    if (!Table?.LatestStreamArn) throw new Error(`Table ${this.options.tableName} has no stream enabled`);
    this.streamArn = Table.LatestStreamArn;
    for (const shard of await this.describeShards()) {
      this.known.add(shard.id);
      if (shard.closed) this.finished.add(shard.id);
      else await this.openAtTip(shard.id);
    }
    this.lastDiscovery = Date.now();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake?.();
    await this.loop;
    this.streams.destroy();
    this.tables.destroy();
  }

  private async run(): Promise<void> {
    const interval = this.options.intervalMs ?? 50;
    while (!this.stopped) {
      // Records read (read again at once), or, when batching, a full page read (a backlog: read on).
      let busy = false;
      for (const [shardId, iterator] of [...this.iterators]) {
        if (this.stopped) break;
        try {
          const read = await this.readShard(shardId, iterator);
          busy = (this.options.batching ? read === PAGE_SIZE : read > 0) || busy;
        } catch (error) {
          if (this.stopped) break;
          // An expired iterator, or DynamoDB Local busy: continue after the last record read.
          this.options.logger.log('error', 'stream.read_failed', { shardId, error: String(error) });
          await this.reopenShard(shardId);
        }
      }
      if (!this.stopped && Date.now() - this.lastDiscovery > DISCOVERY_INTERVAL_MS) {
        await this.discoverShards().catch((error: unknown) => {
          this.options.logger.log('error', 'stream.describe_failed', { error: String(error) });
        });
      }
      if (!busy && !this.stopped) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          this.timer = setTimeout(resolve, interval);
        });
      }
    }
  }

  /** Reads one page of a shard; how many records it had. */
  private async readShard(shardId: string, iterator: string): Promise<number> {
    const page = await this.streams.send(
      new GetRecordsCommand({ ShardIterator: iterator, Limit: PAGE_SIZE }),
    );
    const records = page.Records ?? [];
    if (records.length > 0) {
      await this.deliver(records, shardId);
      const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
      if (last) this.lastSequence.set(shardId, last);
    }
    if (page.NextShardIterator) {
      this.iterators.set(shardId, page.NextShardIterator);
    } else {
      // The shard closed: its children take over, each from its beginning.
      this.iterators.delete(shardId);
      this.finished.add(shardId);
      await this.discoverShards();
    }
    return records.length;
  }

  /** Opens the shards not seen before whose parent is read to its end (or unknown: trimmed away). */
  private async discoverShards(): Promise<void> {
    this.lastDiscovery = Date.now();
    for (const shard of await this.describeShards()) {
      if (this.known.has(shard.id)) continue;
      if (shard.parent && this.known.has(shard.parent) && !this.finished.has(shard.parent)) continue;
      this.known.add(shard.id);
      await this.openShard(shard.id, 'TRIM_HORIZON');
    }
  }

  private async reopenShard(shardId: string): Promise<void> {
    const after = this.lastSequence.get(shardId);
    try {
      const { ShardIterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: this.streamArn,
          ShardId: shardId,
          ...(after
            ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after }
            : { ShardIteratorType: 'TRIM_HORIZON' }),
        }),
      );
      if (ShardIterator) this.iterators.set(shardId, ShardIterator);
      else this.iterators.delete(shardId);
    } catch (error) {
      // Keep the old iterator: the next round tries again.
      this.options.logger.log('error', 'stream.reopen_failed', { shardId, error: String(error) });
    }
  }

  private async deliver(records: StreamRecord[], shardId: string): Promise<void> {
    const { filters } = this.options;
    const passed = records
      .map(toLambdaRecord)
      .filter((record) => !filters || filters.some((pattern) => matchesFilter(pattern, record)));
    if (passed.length === 0) return;
    const event: DynamoDBStreamEvent = { Records: passed };
    const maxAttempts = this.options.maxAttempts ?? 4;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.options.handle(event, shardId);
        return;
      } catch (error) {
        if (attempt >= maxAttempts || this.stopped) {
          this.options.logger.log('error', 'stream.batch_skipped', {
            records: records.length,
            error: String(error),
          });
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    }
  }

  private async describeShards(): Promise<{ id: string; parent?: string; closed: boolean }[]> {
    const shards: { id: string; parent?: string; closed: boolean }[] = [];
    let start: string | undefined;
    do {
      const { StreamDescription } = await this.streams.send(
        new DescribeStreamCommand({ StreamArn: this.streamArn, ExclusiveStartShardId: start }),
      );
      for (const shard of StreamDescription?.Shards ?? []) {
        shards.push({
          id: shard.ShardId!,
          ...(shard.ParentShardId && { parent: shard.ParentShardId }),
          closed: shard.SequenceNumberRange?.EndingSequenceNumber !== undefined,
        });
      }
      start = StreamDescription?.LastEvaluatedShardId;
    } while (start);
    return shards;
  }

  /**
   * Opens a shard after its last record, as LATEST does, but by reading up to it from the start: the position is
   * then a sequence number, so a read that fails before anything new came is reopened there. A shard reopened
   * at LATEST instead would skip what was written in between (seen under a loaded full test suite: the guard's
   * first sends never reached it).
   */
  private async openAtTip(shardId: string): Promise<void> {
    await this.openShard(shardId, 'TRIM_HORIZON');
    let iterator = this.iterators.get(shardId);
    while (iterator) {
      const page = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      const records = page.Records ?? [];
      const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
      if (last) this.lastSequence.set(shardId, last);
      iterator = page.NextShardIterator;
      if (iterator) this.iterators.set(shardId, iterator);
      else this.iterators.delete(shardId);
      if (records.length === 0) break;
    }
  }

  private async openShard(shardId: string, type: 'TRIM_HORIZON'): Promise<void> {
    const { ShardIterator } = await this.streams.send(
      new GetShardIteratorCommand({ StreamArn: this.streamArn, ShardId: shardId, ShardIteratorType: type }),
    );
    if (ShardIterator) this.iterators.set(shardId, ShardIterator);
  }
}

const isNode = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Lambda's event filtering, for the operators the stack's patterns use: every field of the pattern must match; a
 * list of values matches a leaf equal to one of them (or, for a list in the record, one of its elements); `exists`
 * tests for a leaf, so it never matches a map (Lambda's documented rule, which the patterns must follow).
 */
export function matchesFilter(pattern: FilterPattern, event: unknown): boolean {
  return Object.entries(pattern).every(([field, rule]) => {
    const value = isNode(event) ? event[field] : undefined;
    if (!Array.isArray(rule)) return matchesFilter(rule as FilterPattern, value);
    return (rule as readonly FilterValue[]).some((accepted) => matchesLeaf(accepted, value));
  });
}

function matchesLeaf(accepted: FilterValue, value: unknown): boolean {
  if (typeof accepted === 'object') {
    if (Object.keys(accepted).join() !== 'exists')
      throw new Error(`Unsupported filter rule ${JSON.stringify(accepted)}`);
    const isLeaf = (node: unknown) => node !== undefined && !isNode(node) && !Array.isArray(node);
    return accepted.exists === (Array.isArray(value) ? value.some(isLeaf) : isLeaf(value));
  }
  return Array.isArray(value) ? value.some((element) => element === accepted) : value === accepted;
}

/** The Streams API's record in the shape Lambda passes to a function (dates as epoch seconds). */
function toLambdaRecord(record: StreamRecord): DynamoDBRecord {
  const change = record.dynamodb;
  const created = change?.ApproximateCreationDateTime;
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    eventVersion: record.eventVersion,
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion,
    dynamodb: {
      ...(created && { ApproximateCreationDateTime: Math.floor(new Date(created).getTime() / 1000) }),
      Keys: change?.Keys as NonNullable<DynamoDBRecord['dynamodb']>['Keys'],
      ...(change?.NewImage && {
        NewImage: change.NewImage as NonNullable<DynamoDBRecord['dynamodb']>['NewImage'],
      }),
      ...(change?.OldImage && {
        OldImage: change.OldImage as NonNullable<DynamoDBRecord['dynamodb']>['OldImage'],
      }),
      SequenceNumber: change?.SequenceNumber,
      SizeBytes: change?.SizeBytes,
      StreamViewType: change?.StreamViewType as NonNullable<DynamoDBRecord['dynamodb']>['StreamViewType'],
    },
  };
}
