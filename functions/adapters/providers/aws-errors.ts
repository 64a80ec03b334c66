/**
 * What the AWS messaging adapters share about AWS's answers: which errors mean what for the operator, and how
 * long a call may take. No SDK here (types only): the SDK modules load at the first send (aws-sms.ts).
 */
import { ProviderError, type ProviderErrorCode } from '../../core/providers';

/**
 * The SDK clients' time limits, in milliseconds. They send with `maxAttempts: 1` (the workflow, not the SDK,
 * decides what happens after a failure), and without limits a stalled connection would hold the deliver task
 * until its Lambda time-out. A call that ends in a time-out moves delivery to the next channel at once, so the
 * limits must be short enough that giving up is no later than the channel switch itself (8 s after an
 * acceptance) and long enough that a send AWS is still answering is rarely abandoned, since an abandoned send
 * may still be delivered, and the next channel's message would then be a second one, paid:
 * - connect, 1 s: TCP and TLS to the regional endpoint take tens of milliseconds from Lambda in the same
 *   region; a connection not made in 1 s carried nothing, so moving on is free.
 * - the whole request, 5 s (connection included): past the connection the send may have been taken. 5 s ends
 *   before the 8 s a silent channel is given and keeps the task within its run budget (core/delivery-time.ts).
 * `throwOnRequestTimeout`: without it, @smithy/node-http-handler only logs a warning when `requestTimeout`
 * passes and goes on waiting.
 */
const AWS_CONNECT_TIMEOUT_MS = 1_000;
export const AWS_REQUEST_TIMEOUT_MS = 5_000;

/** The `requestHandler` option of an SDK v3 client (NodeHttpHandler's options, taken as a plain object). */
export const awsClientTimeouts = {
  connectionTimeout: AWS_CONNECT_TIMEOUT_MS,
  requestTimeout: AWS_REQUEST_TIMEOUT_MS,
  throwOnRequestTimeout: true,
} as const;

/** `ValidationException` / `ConflictException` reasons that tell the operator something specific. */
const REASON_CODES: Readonly<Record<string, ProviderErrorCode>> = {
  // The account's SMS sandbox: only verified destination numbers (sandbox, user guide); every other send fails.
  DESTINATION_PHONE_NUMBER_NOT_VERIFIED: 'sandbox_destination_not_verified',
  // SendTextMessage's MaxPrice is below the price of this destination.
  PRICE_OVER_THRESHOLD: 'price_over_threshold',
};

/** Error names (the services' exception shapes, and the SDK's own time-out) and what they mean here. */
const NAME_CODES: Readonly<Record<string, ProviderErrorCode>> = {
  AccessDeniedException: 'access_denied',
  AccessDeniedByMetaException: 'access_denied',
  ValidationException: 'invalid_request',
  InvalidParametersException: 'invalid_request',
  ResourceNotFoundException: 'invalid_request',
  ThrottlingException: 'throttled',
  ThrottledRequestException: 'throttled',
  TimeoutError: 'timeout',
  RequestTimeout: 'timeout',
};

/** An AWS SDK error as a ProviderError with its code, AWS's own message kept. */
export function awsProviderError(error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  const { name, Reason, message } = (error ?? {}) as { name?: unknown; Reason?: unknown; message?: unknown };
  const code =
    (typeof Reason === 'string' ? REASON_CODES[Reason] : undefined) ??
    (typeof name === 'string' ? NAME_CODES[name] : undefined) ??
    'provider_error';
  const text = typeof message === 'string' && message !== '' ? message : String(name ?? 'AWS error');
  return new ProviderError(code, typeof Reason === 'string' ? `${text} (${Reason})` : text);
}
