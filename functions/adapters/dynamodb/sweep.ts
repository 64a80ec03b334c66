/** The sweeper's port on the table: the ledger's accepted sends, their verifications, and the sweep cursor. */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Verification } from '../../core/model';
import type { AcceptedSend, DeliverySweepStore, SweepCursor, TimeSpan } from '../../core/ports';
import { verificationFromItem } from './items';
import { keys } from './keys';
import { batchGetAll, isConditionFailure, queryAll } from './requests';

/** Ledger queries (a service's charge lines in one span) the sweeper makes at once. */
const LEDGER_QUERIES_AT_ONCE = 16;
/** BatchGetItem's limit of keys per request. */
const BATCH_GET_KEYS = 100;

export class DynamoDeliverySweepStore implements DeliverySweepStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async listAcceptedSends(spans: readonly TimeSpan[]): Promise<AcceptedSend[][]> {
    // The ledger is per service: the directory lists the services once, then each one's charge lines per span.
    const services = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.serviceDirectory('').pk },
      ProjectionExpression: 'service_sid, ledger_shards',
    });
    const lines: string[][] = spans.map(() => []);
    // A service whose balance is spread over shards keeps a ledger per shard (docs/adr/0014-sharded-balance.md).
    const ledgers = services.flatMap((item) =>
      Array.from({ length: typeof item.ledger_shards === 'number' ? item.ledger_shards : 1 }, (_, shard) => ({
        serviceSid: item.service_sid as string,
        shard,
      })),
    );
    const queries = ledgers.flatMap(({ serviceSid, shard }) =>
      spans.map((span, index) => async () => {
        const range = keys.chargeRange(serviceSid, span.from, span.to, shard);
        const found = await queryAll(this.client, {
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': range.pk, ':from': range.skFrom, ':to': range.skTo },
          ProjectionExpression: 'sk',
          // Strongly consistent: a line the query missed would never be looked at (the cursor moves past it).
          ConsistentRead: true,
        });
        lines[index]!.push(...found.map((line) => line.sk as string));
      }),
    );
    for (let i = 0; i < queries.length; i += LEDGER_QUERIES_AT_ONCE) {
      await Promise.all(queries.slice(i, i + LEDGER_QUERIES_AT_ONCE).map((query) => query()));
    }
    // `CHARGE#<time>#<sid>`: in time order across services.
    return lines.map((span) => span.sort().map(keys.chargedSend));
  }

  async readVerifications(sids: string[]): Promise<Verification[]> {
    const found: Verification[] = [];
    for (let i = 0; i < sids.length; i += BATCH_GET_KEYS) {
      const items = await batchGetAll(
        this.client,
        this.tableName,
        sids.slice(i, i + BATCH_GET_KEYS).map(keys.verification),
        false,
      );
      found.push(...items.map(verificationFromItem));
    }
    return found;
  }

  async getSweepCursor(): Promise<SweepCursor | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.sweepCursor(), ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return {
      restartedThrough: Item.restarted_through as string,
      settledThrough: Item.settled_through as string,
      deferred: (Item.deferred as Record<string, string> | undefined) ?? {},
      version: Item.version as number,
    };
  }

  async saveSweepCursor(next: SweepCursor, seen: SweepCursor | undefined): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...keys.sweepCursor(),
            type: 'sweep_cursor',
            restarted_through: next.restartedThrough,
            settled_through: next.settledThrough,
            deferred: next.deferred,
            version: next.version,
          },
          ConditionExpression: seen ? 'version = :seen' : 'attribute_not_exists(pk)',
          ...(seen && { ExpressionAttributeValues: { ':seen': seen.version } }),
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}
