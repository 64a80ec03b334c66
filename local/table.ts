import { CreateTableCommand, UpdateTimeToLiveCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TABLE_SCHEMA } from '../functions/adapters/dynamodb/keys';

/** Creates the service table from the same schema the CDK stack uses. */
export async function createTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: TABLE_SCHEMA.partitionKey, AttributeType: 'S' },
          { AttributeName: TABLE_SCHEMA.sortKey, AttributeType: 'S' },
          ...Object.values(TABLE_SCHEMA.indexes).flatMap((index) => [
            { AttributeName: index.partitionKey, AttributeType: 'S' as const },
            { AttributeName: index.sortKey, AttributeType: 'S' as const },
          ]),
        ],
        KeySchema: [
          { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
          { AttributeName: TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: Object.values(TABLE_SCHEMA.indexes).map((index) => ({
          IndexName: index.name,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
            { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' as const },
        })),
      }),
    );
  } catch (error) {
    // A persisted local database already has it.
    if ((error as Error).name === 'ResourceInUseException') return;
    throw error;
  }
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: TABLE_SCHEMA.ttlAttribute, Enabled: true },
    }),
  );
}
