import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface DynamoConnection {
  /** Set for DynamoDB Local; unset on AWS. */
  endpoint?: string;
  region?: string;
}

/**
 * Every AWS SDK client of the functions fails fast and retries a bounded number of times, so a slow or lost
 * answer ends in a decision inside the function's time-out (lib/otp-stack.ts sizes the time-outs from these):
 * the SDK's defaults wait without limit for an answer.
 */
export const AWS_CLIENT_LIMITS = {
  /** Milliseconds to open a connection, and of silence on a request before it is abandoned. */
  connectionTimeoutMs: 300,
  requestTimeoutMs: 1000,
  /** Tries per call, the first included. */
  maxAttempts: 3,
} as const;

/** The longest one SDK call can take: every attempt times out, with the standard mode's backoff between. */
export const worstCallMs = (limits = AWS_CLIENT_LIMITS): number =>
  limits.maxAttempts * (limits.connectionTimeoutMs + limits.requestTimeoutMs) +
  // Standard retry mode: at most 0.5 s x 2^n for throttling errors (full jitter under it).
  Array.from({ length: limits.maxAttempts - 1 }, (_, n) => 500 * 2 ** (n + 1)).reduce((a, b) => a + b, 0);

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
    maxAttempts: AWS_CLIENT_LIMITS.maxAttempts,
    // DynamoDB Local on a busy laptop or CI machine can take over a second to accept or answer (100 requests at
    // once open 100 sockets); its slowness is not what the time-outs are for (the fault tests inject lost answers
    // instead), so it gets a generous connect time-out and no request time-out.
    requestHandler: connection.endpoint ? { connectionTimeout: 10_000 } : awsRequestHandler(),
  });
}

/**
 * The handler options of every client on AWS. `throwOnRequestTimeout`: without it a request past its time-out
 * only logs a warning and keeps waiting (an SDK whose handler predates the option ignores it, and keeps only the
 * bounded attempts).
 */
export const awsRequestHandler = () => ({
  connectionTimeout: AWS_CLIENT_LIMITS.connectionTimeoutMs,
  requestTimeout: AWS_CLIENT_LIMITS.requestTimeoutMs,
  throwOnRequestTimeout: true,
});

/** The one way the service builds its DynamoDB document client, so every adapter marshals the same way. */
export function createDocumentClient(connection: DynamoConnection = {}): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(createDynamoClient(connection), {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
  });
}
