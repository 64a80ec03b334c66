import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from './keys';
import { queryAll } from './requests';

/** Every item under a service whose sort key starts with `prefix` (templates, charges, keys, webhooks), all pages. */
export function queryServiceChildren(
  client: DynamoDBDocumentClient,
  tableName: string,
  serviceSid: string,
  prefix: string,
  consistentRead = false,
): Promise<Record<string, unknown>[]> {
  return queryAll(client, {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': keys.service(serviceSid).pk, ':prefix': prefix },
    ConsistentRead: consistentRead,
  });
}
