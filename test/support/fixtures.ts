import type { Verification } from '../../functions/core/model';

export const SERVICE_SID = 'VA0123456789abcdef0123456789abcdef';
export const VERIFICATION_SID = 'VE0123456789abcdef0123456789abcdef';
export const CREATED_AT = new Date('2026-11-21T12:00:00.000Z');

/** A PENDING verification of a UK mobile, created at CREATED_AT, five minutes to live; override what a test needs. */
export function aVerification(changes: Partial<Verification> = {}): Verification {
  return {
    sid: VERIFICATION_SID,
    serviceSid: SERVICE_SID,
    to: '+447400123456',
    status: 'PENDING',
    deliveryStatus: 'PENDING',
    channel: 'sna',
    price: 600,
    attemptsRemaining: 5,
    expiresAt: new Date(CREATED_AT.getTime() + 300_000).toISOString(),
    dateCreated: CREATED_AT.toISOString(),
    clientCode: false,
    codeHash: 'hash-of-the-code',
    sealedCode: 'sealed.code.value',
    message: 'Your code is {code}.',
    channels: ['sna', 'viber'],
    deliveries: {},
    ...changes,
  };
}
