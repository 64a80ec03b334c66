import { formatUnits } from './money';
import type { CodeStatus, Verification } from './model';
import type { Channel } from './routing';

/** The verification object of spec part 2, exactly its fields. */
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
 * The code's state at `now`. Stored state can lag: a PENDING code past `expires_at` is EXPIRED (spec 3),
 * and a PENDING code with no attempts left is LOCKED, whether or not a write has caught up yet.
 */
export function effectiveStatus(verification: Verification, now: Date): CodeStatus {
  if (verification.status !== 'PENDING') return verification.status;
  if (verification.attemptsRemaining <= 0) return 'LOCKED';
  if (now.toISOString() >= verification.expiresAt) return 'EXPIRED';
  return 'PENDING';
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

/** Puts the code into the template text. */
export const renderMessage = (template: string, code: string): string => template.split('{code}').join(code);
