/**
 * Every refusal the API can give, by the spec's `code`. The core raises these; the HTTP layer alone
 * knows which status each one maps to (functions/http/errors.ts).
 */
export type ErrorCode =
  | 'invalid_parameter'
  | 'invalid_code'
  | 'unroutable'
  | 'no_default_template'
  | 'no_eligible_channel'
  | 'unreachable'
  | 'insufficient_funds'
  | 'blocked_by_policy'
  | 'unknown_template'
  | 'not_found'
  | 'client_code'
  | 'burst'
  | 'rate_limited'
  | 'not_priceable'
  // Not in the spec's tables (spec 5.5 and 7.4 leave them open): authentication and the generic ones.
  | 'unauthorized'
  | 'forbidden'
  | 'route_not_found'
  | 'method_not_allowed'
  | 'invalid_signature'
  | 'service_unavailable'
  | 'internal_error';

export class OtpError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Set only for the per-key request limit: the spec sends `Retry-After` there and nowhere else. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'OtpError';
  }
}

export const isOtpError = (error: unknown): error is OtpError => error instanceof OtpError;
