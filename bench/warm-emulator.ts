/**
 * Warms a fresh DynamoDB Local before cold starts are measured on it. DynamoDB in a region is a warm service;
 * a fresh emulator is a JVM whose request paths have not been compiled yet, and a transaction is the slowest
 * of them: a fresh process's first `TransactWriteItems` are many times slower than after a few hundred (the
 * latency part's raw figure). Without this, a cold function's first invoke measured the emulator's
 * warm-up, and the send (the only entry with a transaction) carried most of it. The warm-up runs on a table of
 * its own, so the tables the cold starts use stay empty.
 */
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { addTable, type BenchDb } from './setup';

export async function warmEmulator(db: BenchDb, rounds = 200): Promise<void> {
  const { documents: client, tableName: TableName } = await addTable(db);
  const key = (i: number) => ({ pk: `WARM#${i % 50}`, sk: 'ITEM' });
  for (let i = 0; i < rounds; i++) {
    await client.send(
      new PutCommand({ TableName, Item: { ...key(i), n: i, counts: {}, map: { a: 'x', b: [1, 2] } } }),
    );
    await client.send(new GetCommand({ TableName, Key: key(i), ConsistentRead: true }));
    await client.send(
      new UpdateCommand({
        TableName,
        Key: key(i),
        UpdateExpression: 'SET counts.#w = if_not_exists(counts.#w, :zero) + :one',
        ConditionExpression: 'attribute_not_exists(counts.#w) OR counts.#w < :limit',
        ExpressionAttributeNames: { '#w': String(i % 3) },
        ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':limit': 1_000_000 },
      }),
    );
    await client.send(
      new BatchGetCommand({
        RequestItems: { [TableName]: { Keys: [key(i), key(i + 7), key(i + 13)], ConsistentRead: true } },
      }),
    );
    await client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName,
              Item: { pk: `WARM#TX#${i}`, sk: 'ITEM', n: i },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Update: {
              TableName,
              Key: key(i + 3),
              UpdateExpression: 'SET n = :n',
              ExpressionAttributeValues: { ':n': i },
            },
          },
        ],
      }),
    );
    await client.send(
      new QueryCommand({
        TableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': key(i).pk },
      }),
    );
  }
}
