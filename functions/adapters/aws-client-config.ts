/**
 * The one place that sets how long an AWS SDK client of the functions may wait and how often it tries: every
 * `new …Client(` in functions/ spreads `awsClientConfig(<its package>)` (test/slow/aws-client-config.test.ts
 * enumerates them). The SDK's defaults wait without limit for an answer, so a stalled connection would hold a
 * function until its Lambda time-out. Plain objects, no SDK import: the messaging adapters load their SDK at the
 * first send.
 */

export interface AwsCallLimits {
  /** Milliseconds to open a connection. */
  connectionTimeoutMs: number;
  /** Milliseconds for the whole request, from its start. */
  requestTimeoutMs: number;
  /** Tries per call, the first included. */
  maxAttempts: number;
}

/** Same-region data calls that answer in milliseconds: fail fast, retry, and end inside the caller's budget. */
const DATA_PATH: AwsCallLimits = { connectionTimeoutMs: 300, requestTimeoutMs: 1000, maxAttempts: 3 };

/**
 * A message send: one try (the workflow decides what follows a failure). An abandoned send may still be
 * delivered and the next channel's message would be a second one, paid, so the request gets 5 s, which still
 * ends before the 8 s a silent channel is given (core/delivery-time.ts). A connection not made in 1 s carried
 * nothing, so moving on is free.
 */
const MESSAGE_SEND: AwsCallLimits = { connectionTimeoutMs: 1000, requestTimeoutMs: 5000, maxAttempts: 1 };

/** Limits per SDK client package (the names lib/functions.ts `awsClientsOf` gives each bundle's clients). */
export const AWS_CALL_LIMITS = {
  '@aws-sdk/client-dynamodb': DATA_PATH,
  '@aws-sdk/client-sfn': DATA_PATH,
  // A lost enqueue loses a webhook, hence more tries; the worst case still leaves the sender's 5 s post inside
  // its 30 s function.
  '@aws-sdk/client-sqs': { ...DATA_PATH, maxAttempts: 5 },
  // Read once per container, often its first connection (DNS, a cold endpoint): a longer wait than the data
  // path, and two tries so that the worst case ends inside the 10 s API functions.
  '@aws-sdk/client-secrets-manager': { connectionTimeoutMs: 1000, requestTimeoutMs: 2000, maxAttempts: 2 },
  '@aws-sdk/client-pinpoint-sms-voice-v2': MESSAGE_SEND,
  '@aws-sdk/client-socialmessaging': MESSAGE_SEND,
} as const satisfies Record<string, AwsCallLimits>;

export type AwsClientPackage = keyof typeof AWS_CALL_LIMITS;

/**
 * The client options for `pkg`: its tries and its request handler (NodeHttpHandler's options as a plain
 * object). `throwOnRequestTimeout`: without it a request past its time-out only logs a warning and keeps
 * waiting.
 */
export function awsClientConfig(pkg: AwsClientPackage) {
  const limits: AwsCallLimits = AWS_CALL_LIMITS[pkg];
  return {
    maxAttempts: limits.maxAttempts,
    requestHandler: {
      connectionTimeout: limits.connectionTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      throwOnRequestTimeout: true,
    },
  };
}

/** The longest one call can take: every attempt times out, with the standard mode's backoff between. */
export const worstCallMs = (limits: AwsCallLimits): number =>
  limits.maxAttempts * (limits.connectionTimeoutMs + limits.requestTimeoutMs) +
  // Standard retry mode: at most 0.5 s x 2^n for throttling errors (full jitter under it).
  Array.from({ length: limits.maxAttempts - 1 }, (_, n) => 500 * 2 ** (n + 1)).reduce((a, b) => a + b, 0);
