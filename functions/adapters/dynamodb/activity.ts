/**
 * What the console reads about a service's activity, from items the request paths already write: the charge
 * lines under the service (`CHARGE#<at>#<VE>`, one per accepted send) and the verifications they name. Nothing
 * here writes, and nothing on the send, check or fetch path writes anything for it. Every read is bounded: a
 * Query with a `Limit` on the service's own partition, and BatchGetItem of at most the verifications it found.
 */
import {
  BatchGetCommand,
  GetCommand,
  QueryCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { Verification } from '../../core/model';
import { verificationFromItem } from './items';
import { SERVICE_CHILD_PREFIX, keys, type ItemKey } from './keys';
import { VERIFICATION_ATTR } from './status-write';

export interface ChargeRecord {
  at: string;
  verificationSid: string;
  amount: number;
}

/** A verification as the console shows it, with the status-change marks of its item. */
export interface VerificationRecord extends Verification {
  /** Time of the last status-changing write (`event_at`), and how many there were (`event_seq`). */
  lastEventAt?: string;
  eventCount: number;
}

/** BatchGetItem takes at most 100 keys a request. */
const BATCH_GET_MAX = 100;

export class ActivityReader {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * The service's charge lines from `from` (inclusive) to `to` (exclusive), newest first, at most `limit`;
   * `truncated` when there were more. A service of several balance shards has a ledger per shard: each is read
   * to the limit, then merged.
   */
  async charges(
    serviceSid: string,
    range: { from: Date; to: Date },
    limit: number,
  ): Promise<{ charges: ChargeRecord[]; truncated: boolean }> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.service(serviceSid),
        ProjectionExpression: 'balance_shards',
      }),
    );
    const shards = typeof Item?.balance_shards === 'number' ? Item.balance_shards : 1;
    const ledgers = await Promise.all(
      Array.from({ length: shards }, (_, shard) => this.ledgerCharges(serviceSid, shard, range, limit)),
    );
    const charges = ledgers
      .flat()
      .sort((a, b) => (a.sk < b.sk ? 1 : -1))
      .map(({ sk: _sk, ...charge }) => charge);
    return { charges: charges.slice(0, limit), truncated: charges.length > limit };
  }

  /** One ledger's lines in the range, newest first, at most `limit` + 1 (the one more tells of more). */
  private async ledgerCharges(
    serviceSid: string,
    shard: number,
    range: { from: Date; to: Date },
    limit: number,
  ): Promise<(ChargeRecord & { sk: string })[]> {
    const charges: (ChargeRecord & { sk: string })[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: {
            ':pk': keys.ledgerPartition(serviceSid, shard),
            ':from': `${SERVICE_CHILD_PREFIX.charge}${range.from.toISOString()}`,
            // Every line before `to`: `CHARGE#<to>` sorts after every `CHARGE#<earlier>#VE...`.
            ':to': `${SERVICE_CHILD_PREFIX.charge}${range.to.toISOString()}`,
          },
          ScanIndexForward: false,
          Limit: limit + 1 - charges.length,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        charges.push({
          sk: item.sk as string,
          at: item.at as string,
          verificationSid: item.verification_sid as string,
          amount: item.amount as number,
        });
      }
      start = page.LastEvaluatedKey;
    } while (start && charges.length <= limit);
    return charges;
  }

  /** The verifications named, in the order given; those gone (TTL, a week after expiry) are left out. */
  async verifications(sids: readonly string[]): Promise<VerificationRecord[]> {
    const unique = [...new Set(sids)];
    const found = new Map<string, VerificationRecord>();
    for (let i = 0; i < unique.length; i += BATCH_GET_MAX) {
      let pending: ItemKey[] = unique.slice(i, i + BATCH_GET_MAX).map((sid) => keys.verification(sid));
      for (let round = 0; pending.length > 0; round++) {
        if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 20 * 2 ** round)));
        if (round > 8) throw new Error('DynamoDB left keys unprocessed after retries');
        const result = await this.client.send(
          new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: pending } } }),
        );
        for (const item of result.Responses?.[this.tableName] ?? []) {
          const record = recordFromItem(item);
          found.set(record.sid, record);
        }
        pending = (result.UnprocessedKeys?.[this.tableName]?.Keys as ItemKey[] | undefined) ?? [];
      }
    }
    return sids.flatMap((sid) => {
      const record = found.get(sid);
      return record ? [record] : [];
    });
  }

  async verification(sid: string): Promise<VerificationRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.verification(sid) }),
    );
    return Item && recordFromItem(Item);
  }
}

function recordFromItem(item: Record<string, unknown>): VerificationRecord {
  const at = item[VERIFICATION_ATTR.eventAt];
  const seq = item[VERIFICATION_ATTR.eventSeq];
  return {
    ...verificationFromItem(item),
    ...(typeof at === 'string' && { lastEventAt: at }),
    eventCount: typeof seq === 'number' ? seq : 0,
  };
}
