/**
 * Known numbers (`KnownNumber`): a number whose code of one of the service's last sends to it was checked is a
 * returning user. Nothing is written for it: the number's log names the service's last sends to it (written with
 * each accepted send anyway), and the read that confirms a refusal reads those verifications too.
 */
import type { NumberRecord, Verification } from '../model';
import { settledStatus } from '../verification';
import { KNOWN_NUMBER, type KnownNumber } from './model';

/** Services whose last sends a number's log keeps: its item stays small whoever sends to it. */
const SERVICES_KEPT = 8;

/** The verification SIDs of the service's last sends to the number, newest first. */
export const recentSids = (number: NumberRecord, serviceSid: string): string[] =>
  (number.recent?.[serviceSid] ?? []).map(({ sid }) => sid);

/** The number's `recent` after the service's accepted send `sid` at `at`. */
export function recentAfter(
  number: NumberRecord,
  serviceSid: string,
  sid: string,
  at: number,
): NonNullable<NumberRecord['recent']> {
  const recent = {
    ...number.recent,
    [serviceSid]: [{ sid, at }, ...(number.recent?.[serviceSid] ?? [])].slice(0, KNOWN_NUMBER.recent),
  };
  // The services that sent longest ago leave first.
  const kept = Object.entries(recent)
    .sort(([, a], [, b]) => (b[0]?.at ?? 0) - (a[0]?.at ?? 0))
    .slice(0, SERVICES_KEPT);
  return Object.fromEntries(kept);
}

/**
 * The newest of `previous` (read by their SIDs) that is one of the service's last sends as `number` (read in the
 * same request) names them, checked. SIDs asked for from an older read may name sends that are no longer the
 * last: those count for nothing, so that simultaneous sends pass `KNOWN_NUMBER.recent` times at most.
 */
export function knownFrom(
  previous: Verification[] | undefined,
  number: NumberRecord,
  serviceSid: string,
): KnownNumber | undefined {
  const last = recentSids(number, serviceSid);
  const checked = (previous ?? [])
    .filter(
      (v) =>
        last.includes(v.sid) &&
        v.serviceSid === serviceSid &&
        v.to === number.e164 &&
        settledStatus(v) === 'VERIFIED',
    )
    .map((v) => Date.parse(v.dateCreated));
  return checked.length > 0 ? { at: Math.max(...checked) } : undefined;
}
