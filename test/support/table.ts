/**
 * A table of a suite's own on the DynamoDB Local the `dynamodb` project's global set-up started, created from the
 * stack's schema (local/table.ts), with the clients its tests open: `close` destroys every one of them.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { createDocumentClient, createDynamoClient } from '../../functions/adapters/dynamodb/client';
import { createTable } from '../../local/table';

export interface TestTable {
  /** `otp-<prefix>-<random>`: suites share one DynamoDB Local, so each names its tables apart. */
  readonly name: string;
  readonly endpoint: string;
  /** The low-level client: scans, streams, the table itself. */
  readonly raw: DynamoDBClient;
  /** The document client the stores are built on. */
  readonly documents: DynamoDBDocumentClient;
  /** Another document client of its own (for faults or counting that must touch nothing else). */
  client(): DynamoDBDocumentClient;
  /** Destroys every client above; the table stays until DynamoDB Local stops. */
  close(): void;
}

/** The endpoint the global set-up put in the environment. */
export function dynamoEndpoint(): string {
  const endpoint = process.env.DYNAMODB_ENDPOINT;
  if (!endpoint)
    throw new Error(
      'DYNAMODB_ENDPOINT is not set: run the tests through jest (global setup starts DynamoDB Local)',
    );
  return endpoint;
}

export async function freshTable(prefix: string): Promise<TestTable> {
  const endpoint = dynamoEndpoint();
  const name = `otp-${prefix}-${randomBytes(6).toString('hex')}`;
  const raw = createDynamoClient({ endpoint });
  const opened: DynamoDBDocumentClient[] = [];
  const open = () => {
    const client = createDocumentClient({ endpoint });
    opened.push(client);
    return client;
  };
  try {
    await createTable(raw, name);
  } catch (error) {
    raw.destroy();
    throw error;
  }
  return {
    name,
    endpoint,
    raw,
    documents: open(),
    client: open,
    close() {
      for (const client of opened.splice(0)) client.destroy();
      raw.destroy();
    },
  };
}
