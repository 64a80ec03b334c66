/**
 * The console's per-user request limit on the table: each request counted by one conditional write on the item of
 * its user's current minute (docs/adr/0019-console-requests-per-user.md).
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TABLE_SCHEMA, keys } from './keys';
import { markedUpdate } from './requests';

/**
 * How long a window's item is kept past the window's start: its minute, and one more for instances whose clocks
 * are slightly behind. The table's TTL then removes it; an item it has not removed yet is never read again, since
 * each minute has an item of its own.
 */
const KEEP_SECONDS = 120;

export class DynamoConsoleRequests {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * Counts one request of `userId` in the one-minute window starting at `windowStart` while the window's count is
   * below `limit`, creating the window's item with its first request: true when counted, false when the window is
   * full (then nothing is written). Marked (`markedUpdate`): a write the SDK sent again after a lost answer is
   * neither counted twice nor, at the limit, read as a refusal.
   */
  async count(userId: string, windowStart: Date, limit: number): Promise<boolean> {
    const { applied } = await markedUpdate(
      this.client,
      this.tableName,
      {
        Key: keys.consoleRequests(userId, windowStart),
        UpdateExpression: 'SET request_count = if_not_exists(request_count, :zero) + :one, #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(request_count) OR request_count < :limit',
        ExpressionAttributeNames: { '#ttl': TABLE_SCHEMA.ttlAttribute },
        ExpressionAttributeValues: {
          ':zero': 0,
          ':one': 1,
          ':limit': limit,
          ':ttl': Math.floor(windowStart.getTime() / 1000) + KEEP_SECONDS,
        },
      },
      'last_request',
    );
    return applied;
  }
}
