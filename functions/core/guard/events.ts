/**
 * Which of a verification's moments the guard hears of (the table's stream on AWS, the bench in memory): its
 * accepted send, and its checked code and receipt when the guard can weigh them.
 */
import type { Verification } from '../model';
import type { GuardEvent } from './aggregates';

/** The event of a verification just accepted, or none: a send the guard did not judge feeds no signal. */
export function acceptedSendEvent(verification: Verification): GuardEvent | undefined {
  if (!verification.country || verification.guardExempt) return undefined;
  return {
    kind: 'send',
    serviceSid: verification.serviceSid,
    e164: verification.to,
    country: verification.country,
    at: Date.parse(verification.dateCreated),
    accepted: true,
    price: verification.price,
    ...(verification.guard && { decision: verification.guard }),
    ...(verification.clientCode && { callerCode: true as const }),
  };
}

/**
 * Whether the guard weighs this verification's checked code and receipt. Not for a code the caller checks
 * itself: no check of it ever reaches the service, so a receipt would count a code the guard cannot see typed.
 */
export const outcomeWeighed = (
  verification: Verification,
): verification is Verification & { country: string } =>
  verification.country !== undefined && !verification.guardExempt && !verification.clientCode;
