import { timingSafeEqual } from 'node:crypto';
import { formatUnits } from './money';
import type { CodeStatus, Verification } from './model';
import type { Channel } from './routing';

/** The verification object of the API (docs/api.md), exactly its fields. */
export interface VerificationView {
  sid: string;
  to: string;
  status: CodeStatus;
  delivery_status: Verification['deliveryStatus'];
  channel: Channel | null;
  price: string;
  price_unit: 'USD';
  attempts_remaining: number;
  expires_at: string;
  date_created: string;
}

/**
 * The code's state as the checks left it, before time is considered. A check spends an attempt and records its
 * guess in one write (never compares a guess that holds no attempt), so the write that spent the attempt also
 * settles the code: VERIFIED when the recorded guess is the code, LOCKED when no attempt is left.
 */
export function settledStatus(verification: Verification): CodeStatus {
  if (verification.status !== 'PENDING') return verification.status;
  if (guessIsCode(verification)) return 'VERIFIED';
  if (verification.attemptsRemaining <= 0) return 'LOCKED';
  return 'PENDING';
}

/** The code's state at `now`: a PENDING code past `expires_at` is EXPIRED, whether or not written back. */
export function effectiveStatus(verification: Verification, now: Date): CodeStatus {
  const settled = settledStatus(verification);
  if (settled !== 'PENDING') return settled;
  if (now.toISOString() >= verification.expiresAt) return 'EXPIRED';
  return 'PENDING';
}

function guessIsCode({ codeHash, lastGuessHash }: Verification): boolean {
  if (codeHash === undefined || lastGuessHash === undefined) return false;
  const code = Buffer.from(codeHash);
  const guess = Buffer.from(lastGuessHash);
  return code.length === guess.length && timingSafeEqual(code, guess);
}

export function toView(verification: Verification, now: Date): VerificationView {
  return {
    sid: verification.sid,
    to: verification.to,
    status: effectiveStatus(verification, now),
    delivery_status: verification.deliveryStatus,
    channel: verification.channel,
    price: formatUnits(verification.price),
    price_unit: 'USD',
    attempts_remaining: verification.attemptsRemaining,
    expires_at: verification.expiresAt,
    date_created: verification.dateCreated,
  };
}
