/**
 * Exponential backoff: retry n (n = 1..8) waits 5 s × 4^(n-1) after the failed attempt: 5 s, 20 s, 80 s, 5 min 20 s,
 * 21 min 20 s, 1 h 25 min, 5 h 41 min, 22 h 45 min. Nine attempts over about 30 h 20 min, then the dead-letter
 * queue. `backoffScale` shortens the whole schedule on the local stack.
 */
export const RETRY_DELAYS_SECONDS: readonly number[] = [5, 20, 80, 320, 1280, 5120, 20480, 81920];
export const MAX_DELIVERY_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;

/** Seconds to wait after attempt `failedAttempt` failed, or undefined when it was the last. */
export function retryDelaySeconds(failedAttempt: number, backoffScale: number): number | undefined {
  const delay = RETRY_DELAYS_SECONDS[failedAttempt - 1];
  return delay === undefined ? undefined : delay * backoffScale;
}
