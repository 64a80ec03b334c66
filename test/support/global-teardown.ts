import type { DynamoLocal } from '../../local/dynamodb-local';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __dynamoLocal?: DynamoLocal }).__dynamoLocal?.stop();
}
