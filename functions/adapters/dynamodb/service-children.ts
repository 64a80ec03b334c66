import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from './keys';

/** Every item under a service whose sort key starts with `prefix` (templates, charges, keys, webhooks), all pages. */
export async function queryServiceChildren(
  client: DynamoDBDocumentClient,
  tableName: string,
  serviceSid: string,
  prefix: string,
  consistentRead = false,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': keys.service(serviceSid).pk, ':prefix': prefix },
        ExclusiveStartKey: start,
        ConsistentRead: consistentRead,
      }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}
