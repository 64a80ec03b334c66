import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AWS_CALL_LIMITS, awsClientConfig, worstCallMs as worstCallMsOf } from '../aws-client-config';

export interface DynamoConnection {
  /** Set for DynamoDB Local; unset on AWS. */
  endpoint?: string;
  region?: string;
}

/** The longest one DynamoDB call can take (lib/functions.ts sizes the send function's time-out from it). */
export const worstCallMs = (): number => worstCallMsOf(AWS_CALL_LIMITS['@aws-sdk/client-dynamodb']);

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
    ...awsClientConfig('@aws-sdk/client-dynamodb'),
    // DynamoDB Local on a busy laptop or CI machine can take over a second to accept or answer (100 requests at
    // once open 100 sockets); its slowness is not what the time-outs are for (the fault tests inject lost answers
    // instead), so it gets a generous connect time-out and no request time-out.
    ...(connection.endpoint && { requestHandler: { connectionTimeout: 10_000 } }),
  });
}

/** The one way the service builds its DynamoDB document client, so every adapter marshals the same way. */
export function createDocumentClient(connection: DynamoConnection = {}): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(createDynamoClient(connection), {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  });
}
