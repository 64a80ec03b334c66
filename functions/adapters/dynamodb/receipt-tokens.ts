import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ReplayGuard } from '../providers/vonage';
import { TABLE_SCHEMA, keys } from './keys';
import { isConditionFailure } from './requests';

/**
 * Spent signed-callback tokens: one conditional put per callback (`attribute_not_exists`), the item expiring by
 * TTL once the token could no longer be accepted anyway. A replay inside the window fails the condition.
 */
export class DynamoReplayGuard implements ReplayGuard {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async firstUse(id: string, until: Date): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...keys.receiptToken(id), [TABLE_SCHEMA.ttlAttribute]: Math.ceil(until.getTime() / 1000) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}
