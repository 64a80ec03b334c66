/**
 * The local stand-in for Lambda's DynamoDB stream event source: reads DynamoDB Local's own change stream of the
 * table (the Streams API, as on AWS) and hands each batch, shaped as the Lambda event, to the same handler the
 * events function runs. Shards are read in order, a child shard after its parent; a batch whose handler fails
 * is retried a few times, then skipped and logged (the on-failure destination on AWS).
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

export interface StreamPollerOptions {
  endpoint: string;
  tableName: string;
  handle: (event: DynamoDBStreamEvent) => Promise<unknown>;
  logger: Logger;
  /** Pause between reads of an idle shard. */
  intervalMs?: number;
  /** Attempts of a failing batch before it is skipped (Lambda: retry attempts of the event source). */
  maxAttempts?: number;
}

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

export class StreamPoller {
  private readonly streams: DynamoDBStreamsClient;
  private readonly tables: DynamoDBClient;
  private streamArn = '';
  /** Open iterators by shard id. */
  private readonly iterators = new Map<string, string>();
  private readonly finished = new Set<string>();
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: StreamPollerOptions) {
    const config = { endpoint: options.endpoint, region: 'local', credentials };
    this.streams = new DynamoDBStreamsClient(config);
    this.tables = new DynamoDBClient(config);
  }

  /** Starts at the stream's tip (like StartingPosition LATEST): changes from now on. */
  async start(): Promise<void> {
    const { Table } = await this.tables.send(new DescribeTableCommand({ TableName: this.options.tableName }));
    if (!Table?.LatestStreamArn) throw new Error(`Table ${this.options.tableName} has no stream enabled`);
    this.streamArn = Table.LatestStreamArn;
    const shards = await this.describeShards();
    for (const shard of shards) {
      if (shard.closed) this.finished.add(shard.id);
      else await this.openShard(shard.id, 'LATEST');
    }
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
      let busy = false;
      try {
        for (const [shardId, iterator] of [...this.iterators]) {
          if (this.stopped) break;
          busy = (await this.readShard(shardId, iterator)) || busy;
        }
      } catch (error) {
        if (this.stopped) break;
        this.options.logger.log('error', 'stream.read_failed', { error: String(error) });
      }
      // Read again at once while records flow; otherwise wait a little.
      if (!busy && !this.stopped) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          this.timer = setTimeout(resolve, interval);
        });
      }
    }
  }

  /** Reads one page of a shard; true when it had records. */
  private async readShard(shardId: string, iterator: string): Promise<boolean> {
    const page = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 100 }));
    const records = page.Records ?? [];
    if (records.length > 0) await this.deliver(records);
    if (page.NextShardIterator) {
      this.iterators.set(shardId, page.NextShardIterator);
    } else {
      // The shard closed: its children take over, each from its beginning.
      this.iterators.delete(shardId);
      this.finished.add(shardId);
      for (const shard of await this.describeShards()) {
        if (!this.iterators.has(shard.id) && !this.finished.has(shard.id) && shard.parent === shardId) {
          await this.openShard(shard.id, 'TRIM_HORIZON');
        }
      }
    }
    return records.length > 0;
  }

  private async deliver(records: StreamRecord[]): Promise<void> {
    const event: DynamoDBStreamEvent = { Records: records.map(toLambdaRecord) };
    const maxAttempts = this.options.maxAttempts ?? 3;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.options.handle(event);
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

  private async openShard(shardId: string, type: 'LATEST' | 'TRIM_HORIZON'): Promise<void> {
    const { ShardIterator } = await this.streams.send(
      new GetShardIteratorCommand({ StreamArn: this.streamArn, ShardId: shardId, ShardIteratorType: type }),
    );
    if (ShardIterator) this.iterators.set(shardId, ShardIterator);
  }
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
