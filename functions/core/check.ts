import { OtpError } from './errors';
import type { Verification } from './model';
import type { Clock, CodeVault, VerificationStore } from './ports';
import { isSid } from './sids';
import { effectiveStatus, settledStatus, toView, type VerificationView } from './verification';

export interface CheckRequest {
  serviceSid: string;
  verificationSid: string;
  /** Exactly as typed; at most 10 characters (checked by the HTTP layer). */
  code: string;
}

export interface CheckDeps {
  store: VerificationStore;
  vault: CodeVault;
  clock: Clock;
}

/**
 * The check's outcomes: `verified` is the only one that means the code is correct (HTTP 200);
 * `wrong_code` is 422; the rest are 409 with the verification, which must not be used to log anyone in.
 */
export type CheckOutcome = 'verified' | 'wrong_code' | 'locked' | 'expired' | 'already_verified';

export interface CheckResult {
  outcome: CheckOutcome;
  verification: VerificationView;
}

export interface FetchDeps {
  store: VerificationStore;
  clock: Clock;
}

export async function checkVerification(deps: CheckDeps, request: CheckRequest): Promise<CheckResult> {
  if (!isSid('VE', request.verificationSid)) throw notFound();
  // On a cold start the key read ran beside the caller's authentication; the guess is hashed with its key.
  await deps.vault.ready?.();
  const now = deps.clock.now();
  // Spend first, compare second. One conditional write takes an attempt and records the guess while the code is
  // PENDING, unexpired, has attempts left and was not guessed yet; only a guess that got an attempt is compared.
  // Comparing inside a write's condition instead would compare every guess that reaches the table before the
  // fifth attempt is spent: under concurrency, far more than five.
  const guess = deps.vault.hash(request.verificationSid, request.code);
  const spent = await deps.store.spendAttempt(request.verificationSid, request.serviceSid, guess, now);
  if (spent.ok) {
    const status = settledStatus(spent.verification);
    const outcome = status === 'VERIFIED' ? 'verified' : status === 'LOCKED' ? 'locked' : 'wrong_code';
    return { outcome, verification: toView(spent.verification, now) };
  }

  // No attempt taken: say why, from the item as it was (absent: no such verification).
  const current = spent.current;
  if (!current || current.serviceSid !== request.serviceSid) throw notFound();
  if (current.clientCode)
    throw new OtpError('client_code', 'This code was supplied by the caller; check it yourself.');
  const status = effectiveStatus(current, now);
  if (status === 'VERIFIED') return settled('already_verified', current, now);
  if (status === 'LOCKED') return settled('locked', current, now);
  if (status === 'EXPIRED') {
    if (current.status === 'PENDING') await deps.store.markExpired(current.sid, now);
    return settled('expired', current, now);
  }
  // The write's condition is exactly "PENDING at `now`", so a PENDING item here is a broken invariant.
  throw new Error(`Check of ${current.sid} refused while its code is PENDING`);
}

export async function fetchVerification(
  deps: FetchDeps,
  request: { serviceSid: string; verificationSid: string },
): Promise<VerificationView> {
  if (!isSid('VE', request.verificationSid)) throw notFound();
  const verification = await deps.store.getVerification(request.verificationSid);
  if (!verification || verification.serviceSid !== request.serviceSid) throw notFound();
  return toView(verification, deps.clock.now());
}

const notFound = () => new OtpError('not_found', 'No verification with this SID belongs to this service.');

function settled(outcome: CheckOutcome, verification: Verification, now: Date): CheckResult {
  return { outcome, verification: toView(verification, now) };
}
