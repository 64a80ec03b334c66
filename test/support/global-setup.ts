// The AWS SDK warns on every Node 20 process that it will need Node 22 in 2027; Lambda runs Node 22.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { startDynamoLocal, type DynamoLocal } from '../../local/dynamodb-local';

/**
 * One DynamoDB Local for the whole run; each test file creates its own table in it. Tables and their stream
 * records pile up over the run: the stream index keeps DynamoDB Local's answers as fast at the end as at the start.
 */
export default async function globalSetup(): Promise<void> {
  const dynamo = await startDynamoLocal({ indexStreamRecords: true });
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  (globalThis as { __dynamoLocal?: DynamoLocal }).__dynamoLocal = dynamo;
}
