/**
 * The response bodies of the public API as zod schemas, next to the request schemas in `./params.ts`: the
 * verification object (`toView` in the core) and the error object the error middleware writes.
 * The OpenAPI document (`./openapi.ts`) is generated from them and the tests parse real responses with them.
 * No handler imports this module, so it adds nothing to a Lambda bundle.
 */
import * as z from 'zod';
import type { ErrorCode } from '../core/errors';
import type { CodeStatus, DeliveryStatus } from '../core/model';
import { CHANNELS } from '../core/routing';
import { SID_PATTERNS } from '../core/sids';
import type { VerificationView } from '../core/verification';
import { STATUS_BY_CODE } from './errors';

export const CODE_STATUSES = [
  'PENDING',
  'VERIFIED',
  'EXPIRED',
  'LOCKED',
] as const satisfies readonly CodeStatus[];
const DELIVERY_STATUSES = [
  'PENDING',
  'SENT',
  'DELIVERED',
  'FAILED',
] as const satisfies readonly DeliveryStatus[];

/** Every error code the service answers with, from the one status table (functions/http/errors.ts). */
export const ERROR_CODES = Object.keys(STATUS_BY_CODE) as [ErrorCode, ...ErrorCode[]];

/** `Date.prototype.toISOString()` form (docs/api.md, Choices): UTC with milliseconds and a trailing Z. */
const timestamp = (description: string) =>
  z
    .string()
    .regex(/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$/)
    .meta({
      format: 'date-time',
      description: `${description} ISO 8601, UTC, e.g. 2026-11-21T23:33:29.364Z.`,
    });

export const verificationSchema = z
  .object({
    sid: z
      .string()
      .regex(SID_PATTERNS.VE)
      .describe('Verification SID. Store it server-side: the check needs it.'),
    to: z
      .string()
      .regex(/^\+[1-9][0-9]{1,14}$/)
      .describe('The phone number normalised to E.164; may differ from the `To` sent.'),
    status: z.enum(CODE_STATUSES).describe('State of the code.'),
    delivery_status: z
      .enum(DELIVERY_STATUSES)
      .describe('State of the message. SENT can be final: stop polling at DELIVERED, FAILED or expires_at.'),
    channel: z
      .enum(CHANNELS)
      .nullable()
      .describe(
        'Before delivery the first channel tried; once delivered the channel that delivered; null when none is known yet.',
      ),
    price: z
      .string()
      .regex(/^[0-9]+\.[0-9]{4}$/)
      .describe('Cost of this send, a decimal string with four decimals.'),
    price_unit: z.literal('USD'),
    attempts_remaining: z.number().int().min(0).describe('Further checks the code accepts.'),
    expires_at: timestamp('When the code stops working.'),
    date_created: timestamp('When the send was accepted.'),
  })
  .describe('A verification. Every field is always present.');

/** The error object: a `code` of the given codes and a human `message` (never an echo of the input). */
export const errorSchema = (codes: readonly [ErrorCode, ...ErrorCode[]] = ERROR_CODES) =>
  z
    .object({
      code: z.enum(codes),
      message: z.string().describe('For people; match on `code`.'),
    })
    .describe('An error. Nothing is charged for a request answered with an error.');

/** Any error the service answers with. */
export const anyErrorSchema = errorSchema();

// The schema and the core's view must describe the same object: this fails to compile when they drift.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const _sameAsView: Same<z.output<typeof verificationSchema>, VerificationView> = true;
void _sameAsView;
