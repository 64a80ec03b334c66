import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface DynamoConnection {
  /** Set for DynamoDB Local; unset on AWS. */
  endpoint?: string;
  region?: string;
}

/** The low-level client (table administration, streams); DynamoDB Local gets fixed local credentials. */
export function createDynamoClient(connection: DynamoConnection = {}): DynamoDBClient {
  return new DynamoDBClient({
    ...(connection.region && { region: connection.region }),
    ...(connection.endpoint && {
      endpoint: connection.endpoint,
      region: connection.region ?? 'local',
      // DynamoDB Local accepts any credentials; fixed ones keep a developer's real profile out of it.
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
    maxAttempts: 4,
  });
}

/** The one way the service builds its DynamoDB document client, so every adapter marshals the same way. */
export function createDocumentClient(connection: DynamoConnection = {}): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(createDynamoClient(connection), {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  });
}
