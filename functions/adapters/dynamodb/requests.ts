/**
 * Request shapes the DynamoDB adapters share: a refused condition told apart from other errors, a Query read to
 * its last page, and an update of an item that must already exist.
 */
import {
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
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
