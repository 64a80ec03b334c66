/**
 * Request shapes the DynamoDB adapters share: a refused condition told apart from other errors (with the item's
 * old image), a Query read to its last page, a BatchGetItem read to its last key, and conditional updates.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  BatchGetCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { ItemKey } from './keys';

/** The write's condition did not hold (not an outage: the caller decides what it means). */
export const isConditionFailure = (error: unknown): boolean =>
  error instanceof Error && error.name === 'ConditionalCheckFailedException';

/** Every item the query matches, all pages. */
export async function queryAll(
  client: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Updates the item at `key` if it exists; false when it does not (an update never creates it). */
export async function updateExisting(
  client: DynamoDBDocumentClient,
  tableName: string,
  key: ItemKey,
  expression: string,
  values: Record<string, unknown>,
): Promise<boolean> {
  try {
    await client.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: expression,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * The failed item's old image, which DynamoDB returns with `ReturnValuesOnConditionCheckFailure`. The
 * document client does not unmarshall errors, so it arrives as raw attribute values.
 */
export const oldImage = (error: unknown): Record<string, unknown> | undefined => {
  const item = (error as { Item?: Record<string, AttributeValue> }).Item;
  return item && unmarshall(item);
};

/** An UpdateItem whose failed condition is an answer, not an error: false when the condition did not hold. */
export async function updateIfConditionHolds(
  client: DynamoDBDocumentClient,
  tableName: string,
  update: Omit<UpdateCommandInput, 'TableName'>,
): Promise<boolean> {
  try {
    await client.send(new UpdateCommand({ ...update, TableName: tableName }));
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** BatchGetItem, following UnprocessedKeys (rare; only under throttling) until every key is answered. */
export async function batchGetAll(
  client: DynamoDBDocumentClient,
  tableName: string,
  wanted: ItemKey[],
  consistent: boolean,
): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  let pending: ItemKey[] = wanted;
  for (let round = 0; pending.length > 0; round++) {
    if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 20 * 2 ** round)));
    const result = await client.send(
      new BatchGetCommand({
        RequestItems: { [tableName]: { Keys: pending, ConsistentRead: consistent } },
      }),
    );
    found.push(...(result.Responses?.[tableName] ?? []));
    pending = (result.UnprocessedKeys?.[tableName]?.Keys as ItemKey[] | undefined) ?? [];
    if (round > 8 && pending.length > 0) throw new Error('DynamoDB left keys unprocessed after retries');
  }
  return found;
}
