/**
 * The cold-start baseline of the bench (bench/bundles.ts, entry `baseline`): what published Lambda cold-start
 * benchmarks measure, a minimal handler that creates a DynamoDB document client and makes one `GetItem`. It is
 * bundled with the functions' esbuild options (the AWS SDK left to the runtime) and run the same way, so every
 * function's spawn-to-answer can be given as a ratio to it: milliseconds on a shared machine move from run to
 * run, the ratio much less. Not deployed.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

const endpoint = process.env.DYNAMODB_ENDPOINT;
const documents = DynamoDBDocumentClient.from(
  new DynamoDBClient(
    endpoint
      ? { endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {},
  ),
);

export const handler = async (event: { id?: string }): Promise<{ statusCode: number }> => {
  const { Item } = await documents.send(
    new GetCommand({
      TableName: process.env.TABLE_NAME,
      Key: { pk: event.id ?? 'baseline', sk: 'baseline' },
    }),
  );
  return { statusCode: Item ? 200 : 404 };
};
