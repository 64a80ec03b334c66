/**
 * Every function's wiring in one process: the local stack, the tests and the bench build the handlers from
 * these. The Lambda functions do not import this module: each entry file (functions/entries/) is its own
 * composition root and builds only what its handler uses from the small modules in functions/wiring/, so its
 * bundle holds only the AWS clients it calls
 * (lib/functions.ts declares them; test/slow/bundles.test.ts checks).
 */
export { buildDeps, type Deps } from './wiring/deps';
export { allowedChannelsFromEnv } from './wiring/env';
export { logSettled } from './wiring/entries';
export { loadKeyRing } from './wiring/keys';
export { buildWebhookSenderDeps } from './wiring/webhook-sender';
