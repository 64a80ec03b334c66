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
        ],
        KeySchema: [
          { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
          { AttributeName: TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
        ],
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
