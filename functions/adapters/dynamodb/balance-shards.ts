/**
 * A service's balance spread over shards (docs/adr/0014-sharded-balance.md): the shard a send draws on, reading
 * every shard, and how a send that its drawn shard cannot pay is paid from several. Shard 0 is the service
 * item's own `balance`, so a service of one shard is laid out exactly as before shards existed.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from './keys';
import { batchGetAll } from './requests';

/** A part of a send's price taken from one shard. */
export interface Draw {
  shard: number;
  amount: number;
}

/**
 * The shard a send draws on: from its verification SID, whose hex digits are random, so sends spread evenly over
 * the shards with no state shared between Lambda instances, and a resent transaction draws on the same one.
 */
export function shardOf(verificationSid: string, shards: number): number {
  if (shards <= 1) return 0;
  const random = Number.parseInt(verificationSid.slice(-8), 16);
  return Number.isNaN(random) ? 0 : random % shards;
}

/** Every shard's balance, strongly consistent, in shard order (a shard not written yet holds 0). */
export async function readShardBalances(
  client: DynamoDBDocumentClient,
  tableName: string,
  serviceSid: string,
  shards: number,
): Promise<number[]> {
  const wanted = Array.from({ length: shards }, (_, shard) => keys.balanceShard(serviceSid, shard));
  const items = await batchGetAll(client, tableName, wanted, true);
  return wanted.map((key) => {
    const item = items.find((found) => found.pk === key.pk && found.sk === key.sk);
    return typeof item?.balance === 'number' ? item.balance : 0;
  });
}

/** Takes `price` from the fullest shards first; undefined when all of them together cannot pay it. */
export function planDraws(balances: readonly number[], price: number): Draw[] | undefined {
  const fullest = balances
    .map((balance, shard) => ({ shard, balance }))
    .filter(({ balance }) => balance > 0)
    .sort((a, b) => b.balance - a.balance || a.shard - b.shard);
  const draws: Draw[] = [];
  let owed = price;
  for (const { shard, balance } of fullest) {
    if (owed === 0) break;
    const amount = Math.min(balance, owed);
    draws.push({ shard, amount });
    owed -= amount;
  }
  return owed === 0 ? draws : undefined;
}

/**
 * Spreads `total` over `shards` as evenly as whole units allow (the first shards take the remainder), for a
 * top-up or a new spread.
 */
export function spreadEvenly(total: number, shards: number): number[] {
  const part = Math.floor(total / shards);
  const remainder = total - part * shards;
  return Array.from({ length: shards }, (_, shard) => part + (shard < remainder ? 1 : 0));
}
