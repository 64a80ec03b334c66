import type { ErrorCode } from '../core/errors';

/** The HTTP status of every error code, in one place (docs/api.md and docs/openapi.json). */
export const STATUS_BY_CODE: Readonly<Record<ErrorCode, number>> = {
  invalid_parameter: 400,
  invalid_code: 400,
  unroutable: 400,
  no_default_template: 400,
  no_eligible_channel: 400,
  unreachable: 400,
  insufficient_funds: 402,
  blocked_by_policy: 403,
  unknown_template: 404,
  not_found: 404,
  client_code: 409,
  burst: 429,
  rate_limited: 429,
  not_priceable: 500,
  unauthorized: 401,
  forbidden: 403,
  invalid_signature: 401,
  route_not_found: 404,
  method_not_allowed: 405,
  too_many: 409,
  conflict: 409,
  service_unavailable: 503,
  internal_error: 500,
};
