/**
 * What the console's pages show, computed from the records the table already holds: charges by day and by
 * country, conversion by channel and country, one verification's timeline, the charges CSV. Pure functions: no
 * AWS, no HTTP; `./api.ts` reads the records and calls them.
 */
import type { DeliveryAttempt, Verification } from '../core/model';
import { formatUnits } from '../core/money';
import { effectiveStatus } from '../core/verification';
import type { WebhookDeliveryRecord } from '../core/webhooks';

/** A time as the console shows every other: `2026-11-29 10:42:44Z` (UTC, to the second), not raw ISO. */
const shownTime = (iso: string): string => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

export interface ChargeLine {
  at: string;
  verificationSid: string;
  amount: number;
}

export interface TimelineRecord extends Verification {
  lastEventAt?: string;
  eventCount: number;
}

export interface Tally {
  key: string;
  count: number;
  /** USD, four decimals. */
  amount: string;
}

/** Charges per UTC day (newest first) and per country of the number (where its verification is still kept). */
export function chargeSummary(
  charges: readonly ChargeLine[],
  countryOf: ReadonlyMap<string, string | undefined>,
): { total: string; count: number; byDay: Tally[]; byCountry: Tally[] } {
  const byDay = new Map<string, { count: number; units: number }>();
  const byCountry = new Map<string, { count: number; units: number }>();
  let units = 0;
  for (const charge of charges) {
    units += charge.amount;
    add(byDay, charge.at.slice(0, 10), charge.amount);
    add(byCountry, countryOf.get(charge.verificationSid) ?? 'unknown', charge.amount);
  }
  const tallies = (map: Map<string, { count: number; units: number }>) =>
    [...map].map(([key, t]) => ({ key, count: t.count, amount: formatUnits(t.units) }));
  return {
    total: formatUnits(units),
    count: charges.length,
    byDay: tallies(byDay).sort((a, b) => b.key.localeCompare(a.key)),
    byCountry: tallies(byCountry).sort((a, b) => b.count - a.count || a.key.localeCompare(b.key)),
  };
}

function add(map: Map<string, { count: number; units: number }>, key: string, units: number): void {
  const tally = map.get(key) ?? { count: 0, units: 0 };
  tally.count += 1;
  tally.units += units;
  map.set(key, tally);
}

/** RFC 4180 CSV of charge lines; a field never starts with a spreadsheet formula character. */
export function chargesCsv(
  charges: readonly ChargeLine[],
  countryOf: ReadonlyMap<string, string | undefined>,
): string {
  const rows = [['date', 'verification_sid', 'amount_usd', 'country']];
  for (const charge of charges) {
    rows.push([
      charge.at,
      charge.verificationSid,
      formatUnits(charge.amount),
      countryOf.get(charge.verificationSid) ?? '',
    ]);
  }
  return rows.map((row) => row.map(csvField).join(',')).join('\r\n') + '\r\n';
}

function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

interface ConversionRow {
  key: string;
  /** Accepted (charged) sends. */
  sent: number;
  delivered: number;
  verified: number;
}

export interface Conversion {
  sent: number;
  delivered: number;
  verified: number;
  byChannel: ConversionRow[];
  byCountry: ConversionRow[];
  /** Charge lines whose verification is no longer in the table (counted in `sent` only). */
  unknown: number;
}

/**
 * Accepted sends (charge lines), delivered (`delivery_status` DELIVERED) and verified (the code's status), by the
 * channel that delivered (or the last one tried) and by country.
 */
export function conversion(
  charges: readonly ChargeLine[],
  verifications: ReadonlyMap<string, Verification>,
  now: Date,
): Conversion {
  const byChannel = new Map<string, ConversionRow>();
  const byCountry = new Map<string, ConversionRow>();
  const total = { sent: 0, delivered: 0, verified: 0 };
  let unknown = 0;
  for (const charge of charges) {
    total.sent += 1;
    const v = verifications.get(charge.verificationSid);
    if (!v) {
      unknown += 1;
      continue;
    }
    const delivered = v.deliveryStatus === 'DELIVERED' ? 1 : 0;
    const verified = effectiveStatus(v, now) === 'VERIFIED' ? 1 : 0;
    total.delivered += delivered;
    total.verified += verified;
    for (const [map, key] of [
      [byChannel, v.channel ?? lastTried(v) ?? 'none'],
      [byCountry, v.country ?? 'unknown'],
    ] as const) {
      const row = map.get(key) ?? { key, sent: 0, delivered: 0, verified: 0 };
      row.sent += 1;
      row.delivered += delivered;
      row.verified += verified;
      map.set(key, row);
    }
  }
  const rows = (map: Map<string, ConversionRow>) =>
    [...map.values()].sort((a, b) => b.sent - a.sent || a.key.localeCompare(b.key));
  return { ...total, byChannel: rows(byChannel), byCountry: rows(byCountry), unknown };
}

function lastTried(v: Verification): string | undefined {
  const attempts = orderedAttempts(v);
  return attempts[attempts.length - 1]?.channel;
}

const orderedAttempts = (v: Verification): (DeliveryAttempt & { index: number })[] =>
  Object.entries(v.deliveries)
    .map(([index, attempt]) => ({ ...attempt, index: Number(index) }))
    .sort((a, b) => a.index - b.index);

type TimelineKind =
  | 'created'
  | 'attempt'
  | 'switch'
  | 'receipt'
  | 'silence'
  | 'check'
  | 'status'
  | 'webhook'
  | 'webhook-failed'
  | 'note';

interface TimelineEntry {
  kind: TimelineKind;
  /** ISO time, when the table knows it. */
  at?: string;
  /** Seconds after the send, when `at` is known. */
  offsetSeconds?: number;
  channel?: string;
  text: string;
}

export interface Timeline {
  sid: string;
  to: string;
  country?: string;
  status: string;
  deliveryStatus: string;
  channel: string | null;
  price: string;
  dateCreated: string;
  expiresAt: string;
  plan: string[];
  entries: TimelineEntry[];
}

/** A webhook delivery attempt in words: event, endpoint, attempt, the answer or why there was none. */
export function webhookDeliveryText(d: WebhookDeliveryRecord): string {
  const answer = d.status !== undefined ? `HTTP ${d.status}` : (d.error ?? 'no answer');
  const outcome = d.delivered
    ? 'delivered'
    : d.final
      ? 'failed, gave up (dead-letter queue)'
      : 'failed, will retry';
  return `Webhook ${d.eventType} to ${d.endpointSid}, attempt ${d.attempt}: ${answer} in ${d.durationMs} ms, ${outcome}`;
}

const webhookEntry = (d: WebhookDeliveryRecord): TimelineEntry => ({
  kind: d.delivered ? 'webhook' : 'webhook-failed',
  at: d.at,
  text: webhookDeliveryText(d),
});

/**
 * One verification's story from its item: the send, each channel attempt with the provider's answer, the
 * switches after the receipt wait, the receipt or the silence, the checks (outcome only: attempts spent, never a
 * code or a guess), the status changes and the webhook deliveries the sender recorded. The item keeps one time per attempt and the time of the last status
 * change; times it does not keep are left out rather than guessed.
 */
export function timeline(
  v: TimelineRecord,
  settings: { maxCheckAttempts: number; channelWaitSeconds: number },
  now: Date,
  /** The verification's webhook delivery records (the sender's, oldest first); undefined: not read. */
  webhooks?: { deliveries: WebhookDeliveryRecord[]; truncated: boolean },
): Timeline {
  const created = new Date(v.dateCreated).getTime();
  const entry = (e: TimelineEntry): TimelineEntry =>
    e.at ? { ...e, offsetSeconds: Math.round((new Date(e.at).getTime() - created) / 100) / 10 } : e;
  const entries: TimelineEntry[] = [
    entry({
      kind: 'created',
      at: v.dateCreated,
      text: `Send accepted and charged ${formatUnits(v.price)} USD; plan: ${v.channels.join(' → ') || 'none'}`,
    }),
  ];
  const attempts = orderedAttempts(v);
  attempts.forEach((attempt, i) => {
    // `sending`: the provider's answer rides the workflow's next write (ChannelAnswer), or the run died first.
    const answer =
      attempt.outcome === 'accepted'
        ? `accepted by the provider${attempt.messageId ? ` (message ${attempt.messageId})` : ''}`
        : attempt.outcome === 'rejected'
          ? `rejected by the provider${attempt.reason ? `: ${attempt.reason}` : ''}`
          : attempt.skipped
            ? `not sent (${attempt.reason ?? 'skipped'})`
            : attempt.outcome === 'failed'
              ? `provider error${attempt.errorCode ? ` (${attempt.errorCode})` : ''}${attempt.reason ? `: ${attempt.reason}` : ''}`
              : 'handed to the provider, answer not recorded yet';
    entries.push(
      entry({
        kind: 'attempt',
        at: attempt.at,
        channel: attempt.channel,
        text: `${attempt.channel}: ${answer}`,
      }),
    );
    const next = attempts[i + 1];
    if (next && (attempt.outcome === 'accepted' || attempt.outcome === 'sending')) {
      entries.push(
        entry({
          kind: 'switch',
          at: next.at,
          channel: next.channel,
          text: `No receipt for ${attempt.channel} within ${settings.channelWaitSeconds} s: switched to ${next.channel}`,
        }),
      );
    } else if (next) {
      entries.push(
        entry({
          kind: 'switch',
          at: next.at,
          channel: next.channel,
          text: `Next channel at once: ${next.channel}`,
        }),
      );
    }
  });
  for (const attempt of attempts) {
    if (attempt.outcome !== 'accepted' && attempt.outcome !== 'sending') continue;
    if (v.deliveryStatus === 'DELIVERED' && v.channel === attempt.channel) continue;
    entries.push({
      kind: 'silence',
      channel: attempt.channel,
      text: `${attempt.channel}: no delivery receipt`,
    });
  }
  const status = effectiveStatus(v, now);
  // The item keeps the time of the last status change only: it dates the receipt when nothing changed after it.
  const lastChangeIsDelivery = status === 'PENDING' || status === 'EXPIRED';
  if (v.deliveryStatus === 'DELIVERED') {
    entries.push(
      entry({
        kind: 'receipt',
        ...(lastChangeIsDelivery && v.lastEventAt && { at: v.lastEventAt }),
        ...(v.channel && { channel: v.channel }),
        text: `Delivery receipt: delivered over ${v.channel ?? 'a channel'}`,
      }),
    );
  } else if (v.deliveryStatus === 'SENT') {
    entries.push({ kind: 'status', text: 'Delivery ended SENT: a channel accepted it, no receipt came' });
  } else if (v.deliveryStatus === 'FAILED') {
    entries.push({ kind: 'status', text: 'Delivery ended FAILED: no channel accepted it' });
  } else {
    entries.push({ kind: 'status', text: 'Delivery still running' });
  }
  const spent = settings.maxCheckAttempts - v.attemptsRemaining;
  if (v.clientCode) {
    entries.push({ kind: 'check', text: 'Caller-supplied code: checked by the caller, not by the service' });
  } else if (spent <= 0) {
    entries.push({ kind: 'check', text: 'No check yet' });
  } else {
    const wrong = status === 'VERIFIED' ? spent - 1 : spent;
    entries.push({
      kind: 'check',
      text: `${spent} check${spent === 1 ? '' : 's'}: ${wrong} wrong${status === 'VERIFIED' ? ', then right' : ''}`,
    });
  }
  entries.push(
    entry({
      kind: 'status',
      ...(!lastChangeIsDelivery && v.lastEventAt && { at: v.lastEventAt }),
      text:
        status === 'VERIFIED'
          ? 'Code VERIFIED'
          : status === 'LOCKED'
            ? 'Code LOCKED: no attempt left'
            : status === 'EXPIRED'
              ? `Code EXPIRED at ${shownTime(v.expiresAt)}`
              : `Code PENDING until ${shownTime(v.expiresAt)}`,
    }),
  );
  if (webhooks) {
    for (const d of webhooks.deliveries) entries.push(entry(webhookEntry(d)));
    if (webhooks.deliveries.length === 0) {
      entries.push({
        kind: 'note',
        text: 'No webhook delivery recorded (records exist for services with endpoints and are kept 7 days)',
      });
    } else if (webhooks.truncated) {
      entries.push({ kind: 'note', text: 'More webhook deliveries than shown: see the webhooks page' });
    }
  }
  return {
    sid: v.sid,
    to: v.to,
    ...(v.country !== undefined && { country: v.country }),
    status,
    deliveryStatus: v.deliveryStatus,
    channel: v.channel,
    price: formatUnits(v.price),
    dateCreated: v.dateCreated,
    expiresAt: v.expiresAt,
    plan: v.channels,
    entries,
  };
}
