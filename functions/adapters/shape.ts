/**
 * Small checks of parsed JSON, for the delivery side's parsers: the provider configuration, the providers'
 * answers, receipts and secrets, the webhook queue's messages. Their shapes are a few flat fields, and zod (which
 * the HTTP request schemas keep) adds to a bundle's size and to its require time at every cold start
 * (docs/bench.md, "Bundles and cold start"), so the functions that validate no HTTP request do without it.
 */

/** A JSON object: not null, not an array. */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A string of `min` to `max` UTF-16 code units (as zod's `.min()` and `.max()` count). */
export const isText = (value: unknown, max = Number.POSITIVE_INFINITY, min = 0): value is string =>
  typeof value === 'string' && value.length >= min && value.length <= max;

/** Absent (or undefined), or a string of at most `max` code units. */
export const isOptionalText = (value: unknown, max = Number.POSITIVE_INFINITY): value is string | undefined =>
  value === undefined || isText(value, max);

/** One of `values`. */
export const isOneOf = <T extends string>(values: readonly T[], value: unknown): value is T =>
  typeof value === 'string' && (values as readonly string[]).includes(value);
