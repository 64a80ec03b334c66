import { startDynamoLocal, type DynamoLocal } from '../../local/dynamodb-local';

/** One DynamoDB Local for the whole run; each test file creates its own table in it. */
export default async function globalSetup(): Promise<void> {
  const dynamo = await startDynamoLocal();
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  (globalThis as { __dynamoLocal?: DynamoLocal }).__dynamoLocal = dynamo;
}
