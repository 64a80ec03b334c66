import { OtpError } from './errors';
import type { Verification } from './model';
import type { Clock, CodeVault, VerificationStore } from './ports';
import { isSid } from './sids';
import { effectiveStatus, toView, type VerificationView } from './verification';

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
 * The outcomes of spec 4.2: `verified` is the only one that means the code is correct (HTTP 200);
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

/** Bounds the retries of a wrong-code write that lost a race with other checks of the same verification. */
const MAX_ATTEMPT_WRITES = 50;

export async function checkVerification(deps: CheckDeps, request: CheckRequest): Promise<CheckResult> {
  if (!isSid('VE', request.verificationSid)) throw notFound();
  const now = deps.clock.now();
  // One conditional write decides a correct code: 20 simultaneous checks give exactly one `verified`.
  const hash = deps.vault.hash(request.verificationSid, request.code);
  const verified = await deps.store.verifyCode(request.verificationSid, request.serviceSid, hash, now);
  if (verified.ok) return { outcome: 'verified', verification: toView(verified.verification, now) };

  let current = verified.current;
  for (let write = 0; write < MAX_ATTEMPT_WRITES; write++) {
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
    // PENDING, unexpired, attempts left, and the hash did not match: the code is wrong. Spend one attempt.
    const spent = await deps.store.spendAttempt(current.sid, current.attemptsRemaining, now);
    if (spent.ok) {
      const outcome = spent.verification.status === 'LOCKED' ? 'locked' : 'wrong_code';
      return { outcome, verification: toView(spent.verification, now) };
    }
    current = spent.current;
  }
  throw new OtpError(
    'service_unavailable',
    'Too many simultaneous checks of this verification; retry shortly.',
  );
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
