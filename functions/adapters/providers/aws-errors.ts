/**
 * What the AWS messaging adapters share about AWS's answers: which errors mean what for the operator (how long a
 * call may take: ../aws-client-config.ts). No SDK here (types only): the SDK modules load at the first send
 * (aws-sms.ts).
 */
import { ProviderError, type ProviderErrorCode } from '../../core/providers';

/** `ValidationException` / `ConflictException` reasons that tell the operator something specific. */
const REASON_CODES: Readonly<Record<string, ProviderErrorCode>> = {
  // The account's SMS sandbox: only verified destination numbers (sandbox, user guide); every other send fails.
  DESTINATION_PHONE_NUMBER_NOT_VERIFIED: 'sandbox_destination_not_verified',
  // SendTextMessage's MaxPrice is below the price of this destination.
  PRICE_OVER_THRESHOLD: 'price_over_threshold',
  // ServiceQuotaExceededException: the account's monthly spend limit for SMS or RCS is spent (a new account's is
  // $1); every send of that kind fails until the limit is raised or the month ends.
  MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT: 'monthly_spend_limit',
  MONTHLY_SPEND_LIMIT_REACHED_FOR_RCS: 'monthly_spend_limit',
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
