/**
 * Every refusal the API can give, by its `code`. The core raises these; the HTTP layer alone
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
  // The service's own (docs/api.md, Choices): authentication and the generic ones.
  | 'unauthorized'
  | 'forbidden'
  | 'route_not_found'
  | 'method_not_allowed'
  /** The console: a service already has as many of a thing (webhook endpoints) as it may. */
  | 'too_many'
  /** The console: a change made on a copy of settings (the rules, the guard's, the channels) older than them. */
  | 'conflict'
  | 'invalid_signature'
  | 'service_unavailable'
  | 'internal_error';

export class OtpError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Set only for the request limits (per API key, per console user): `Retry-After` is sent there alone. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'OtpError';
  }
}

export const isOtpError = (error: unknown): error is OtpError => error instanceof OtpError;
