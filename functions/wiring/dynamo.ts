/** The DynamoDB document client and table of a function, from its environment. */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../adapters/dynamodb/client';
import { required, type Env } from './env';

export interface TableAccess {
  client: DynamoDBDocumentClient;
  tableName: string;
}

/**
 * `TABLE_NAME`, and a client for `DYNAMODB_ENDPOINT` (DynamoDB Local) when set, else the region's endpoint.
 * DynamoDB Local keeps tables per region: with an endpoint the client keeps the local stack's own region, so an
 * `AWS_REGION` in a developer's shell does not point it at an empty set of tables.
 * `dynamoClient`: one built elsewhere (the reliability tests pass one that fails chosen calls).
 */
export function tableFromEnv(env: Env, dynamoClient?: DynamoDBDocumentClient): TableAccess {
  return {
    client:
      dynamoClient ??
      createDocumentClient(
        env.DYNAMODB_ENDPOINT ? { endpoint: env.DYNAMODB_ENDPOINT } : { region: env.AWS_REGION },
      ),
    tableName: required(env, 'TABLE_NAME'),
  };
}
