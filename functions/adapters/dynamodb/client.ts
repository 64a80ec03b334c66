import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface DynamoConnection {
  /** Set for DynamoDB Local; unset on AWS. */
  endpoint?: string;
  region?: string;
}

/** The one way the service builds its DynamoDB client, so every adapter marshals the same way. */
export function createDocumentClient(connection: DynamoConnection = {}): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    ...(connection.region && { region: connection.region }),
    ...(connection.endpoint && {
      endpoint: connection.endpoint,
      region: connection.region ?? 'local',
      // DynamoDB Local accepts any credentials; fixed ones keep a developer's real profile out of it.
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
    maxAttempts: 4,
  });
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  });
}
