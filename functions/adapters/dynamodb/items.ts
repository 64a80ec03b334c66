/**
 * Each entity to and from its table item. Attribute names are snake_case like the API's fields, so an
 * operator reading the table sees the same words as a caller.
 */
import { KNOWN_NUMBER, isGuardLevel, type GuardDecision, type GuardReason } from '../../core/guard/model';
import type {
  ApiKeyRecord,
  NumberRecord,
  Service,
  ServiceGuardSettings,
  Template,
  Verification,
} from '../../core/model';
import type { WebhookEndpoint } from '../../core/webhooks';
import { CHANNELS, type Channel } from '../../core/routing';
import type { AuditRecord } from '../../core/accounts/ports';
import { keys } from './keys';
import { VERIFICATION_ATTR } from './status-write';

type Item = Record<string, unknown>;

const DAY_SECONDS = 86_400;
const epochSeconds = (date: Date | number): number => Math.floor(new Date(date).getTime() / 1000);

/** Verifications stay readable a week past expiry (fetch answers EXPIRED), then TTL removes them. */
const VERIFICATION_RETENTION_SECONDS = 7 * DAY_SECONDS;

/** A verification's flag: its service had a webhook endpoint when the code was sent (`Verification.webhooks`). */
export const WEBHOOKS_ATTRIBUTE = 'webhooks';

export function verificationToItem(v: Verification): Item {
  return {
    ...keys.verification(v.sid),
    type: 'verification',
    sid: v.sid,
    service_sid: v.serviceSid,
    to: v.to,
    ...(v.country !== undefined && { country: v.country }),
    status: v.status,
    delivery_status: v.deliveryStatus,
    channel: v.channel,
    price: v.price,
    attempts_remaining: v.attemptsRemaining,
    expires_at: v.expiresAt,
    date_created: v.dateCreated,
    client_code: v.clientCode,
    ...(v.codeHash !== undefined && { code_hash: v.codeHash }),
    ...(v.lastGuessHash !== undefined && { last_guess: v.lastGuessHash }),
    ...(v.sealedCode !== undefined && { sealed_code: v.sealedCode }),
    message: v.message,
    channels: v.channels,
    deliveries: v.deliveries,
    // A number set, as the receipts' ADD writes it (DynamoDB refuses an empty set).
    ...(v.failedReceipts && v.failedReceipts.length > 0 && { failed_receipts: new Set(v.failedReceipts) }),
    ...(v.guard && { guard: guardDecisionToItem(v.guard) }),
    ...(v.guardExempt && { guard_exempt: true }),
    // A BOOL the webhook events function's stream filter requires (adapters/dynamodb/stream-filters.ts).
    ...(v.webhooks && { [WEBHOOKS_ATTRIBUTE]: true }),
    ttl: epochSeconds(new Date(v.expiresAt)) + VERIFICATION_RETENTION_SECONDS,
  };
}

export function verificationFromItem(item: Item): Verification {
  return {
    sid: item.sid as string,
    serviceSid: item.service_sid as string,
    to: item.to as string,
    ...(typeof item.country === 'string' && { country: item.country }),
    status: item.status as Verification['status'],
    deliveryStatus: item.delivery_status as Verification['deliveryStatus'],
    channel: (item.channel as Verification['channel']) ?? null,
    price: item.price as number,
    attemptsRemaining: item.attempts_remaining as number,
    expiresAt: item.expires_at as string,
    dateCreated: item.date_created as string,
    clientCode: item.client_code === true,
    codeHash: item.code_hash as string | undefined,
    ...(typeof item.last_guess === 'string' && { lastGuessHash: item.last_guess }),
    sealedCode: item.sealed_code as string | undefined,
    message: item.message as string,
    channels: (item.channels as Verification['channels']) ?? [],
    deliveries: (item.deliveries as Verification['deliveries']) ?? {},
    ...(item.failed_receipts instanceof Set && {
      failedReceipts: [...(item.failed_receipts as Set<unknown>)].map(Number).sort((a, b) => a - b),
    }),
    ...(isItem(item.guard) && { guard: guardDecisionFromItem(item.guard) }),
    ...(item.guard_exempt === true && { guardExempt: true }),
    ...(item[WEBHOOKS_ATTRIBUTE] === true && { webhooks: true }),
  };
}

const isItem = (value: unknown): value is Item => typeof value === 'object' && value !== null;

/** A guard decision as stored on a verification (shadow) or a number's log (refused), with who and where. */
/** A decision and, on a number's log, whose send it refused (service, country, a caller's own code). */
type LoggedGuardDecision = GuardDecision & { serviceSid?: string; country?: string; callerCode?: true };

export function guardDecisionToItem(d: LoggedGuardDecision): Item {
  return {
    mode: d.mode,
    reason: d.reason,
    prefix: d.prefix,
    scope: d.scope,
    figures: d.figures,
    price: d.price,
    at: d.at,
    ...(d.serviceSid !== undefined && { service_sid: d.serviceSid }),
    ...(d.country !== undefined && { country: d.country }),
    ...(d.callerCode && { caller_code: true }),
  };
}

export function guardDecisionFromItem(item: Item): LoggedGuardDecision {
  return {
    mode: item.mode === 'shadow' || item.mode === 'known' ? item.mode : 'blocked',
    reason: item.reason as GuardReason,
    prefix: String(item.prefix),
    scope: item.scope as GuardDecision['scope'],
    figures: (item.figures as GuardDecision['figures']) ?? {},
    price: Number(item.price ?? 0),
    at: Number(item.at),
    ...(typeof item.service_sid === 'string' && { serviceSid: item.service_sid }),
    ...(typeof item.country === 'string' && { country: item.country }),
    ...(item.caller_code === true && { callerCode: true as const }),
  };
}

/**
 * The guard settings kept on the service item (`guard_level`, `guard_safe_list`, and `guard_risk_check_opt_out`
 * when the owner lets a send's RiskCheck=disable skip the guard).
 */
function guardSettingsFromItem(item: Item): ServiceGuardSettings | undefined {
  const level =
    typeof item.guard_level === 'string' && isGuardLevel(item.guard_level) ? item.guard_level : undefined;
  const safeList = Array.isArray(item.guard_safe_list) ? (item.guard_safe_list as string[]) : undefined;
  const caps = isItem(item.guard_caps) ? (item.guard_caps as ServiceGuardSettings['caps']) : undefined;
  const optOut = item.guard_risk_check_opt_out === true;
  if (!level && !safeList && !optOut && !caps) return undefined;
  return {
    level: level ?? 'standard',
    safeList: safeList ?? [],
    ...(optOut && { riskCheckOptOut: true }),
    ...(caps && { caps }),
  };
}

/**
 * Every write that changes a verification's `status` or `delivery_status` also does `ADD event_seq 1` and
 * `SET event_at = now` in the same update (`statusWrite`, status-write.ts), so the webhook events read from the
 * change stream get an increasing sequence number and the time of the change at no extra write. A new
 * verification has neither.
 */
export function eventMarksFromItem(item: Item): { sequence: number; at: Date } {
  const sequence = item[VERIFICATION_ATTR.eventSeq];
  const at = item[VERIFICATION_ATTR.eventAt];
  return {
    sequence: typeof sequence === 'number' ? sequence : 0,
    at: new Date(typeof at === 'string' ? at : (item.date_created as string)),
  };
}

/**
 * A service's entry in the directory of every service: the console operator's list, and the sweeper's way to
 * each service's ledger (so every service is in it: `createService` writes both in one transaction).
 */
export const serviceDirectoryToItem = (service: Service): Item => ({
  ...keys.serviceDirectory(service.sid),
  type: 'service_directory',
  service_sid: service.sid,
  name: service.name,
  created_at: service.createdAt,
});

export function serviceToItem(s: Service): Item {
  return {
    ...keys.service(s.sid),
    type: 'service',
    sid: s.sid,
    name: s.name,
    balance: s.balance,
    enabled_channels: s.enabledChannels,
    ...(s.channelsVersion !== undefined && { channels_version: s.channelsVersion }),
    blocked_countries: s.rules.blockedCountries,
    blocked_prefixes: s.rules.blockedPrefixes,
    // Absent: every served country; an empty list is kept as one (no country).
    ...(s.rules.allowedCountries && { allowed_countries: s.rules.allowedCountries }),
    ...(s.rulesVersion !== undefined && { rules_version: s.rulesVersion }),
    prices: s.prices,
    ...(s.defaultTemplate && { default_template: templateFields(s.defaultTemplate) }),
    created_at: s.createdAt,
    ...(s.guard && { guard_level: s.guard.level, guard_safe_list: s.guard.safeList }),
    ...(s.guard?.riskCheckOptOut && { guard_risk_check_opt_out: true }),
    ...(s.guard?.caps && { guard_caps: s.guard.caps }),
    ...(s.guardVersion !== undefined && { guard_version: s.guardVersion }),
    ...(s.templateSmsParts !== undefined && { template_sms_parts: s.templateSmsParts }),
    ...(s.apiKeyLimit !== undefined && { api_key_limit: s.apiKeyLimit }),
    ...(s.activeApiKeys !== undefined && { active_api_keys: s.activeApiKeys }),
    ...(s.templateCount !== undefined && { template_count: s.templateCount }),
    ...(s.balanceShards !== undefined && s.balanceShards > 1 && { balance_shards: s.balanceShards }),
  };
}

export function serviceFromItem(item: Item): Service {
  const defaultTemplate = item.default_template as Item | undefined;
  return {
    sid: item.sid as string,
    name: item.name as string,
    balance: item.balance as number,
    enabledChannels: (item.enabled_channels as Service['enabledChannels']) ?? [],
    ...(typeof item.channels_version === 'number' && { channelsVersion: item.channels_version }),
    rules: {
      blockedCountries: (item.blocked_countries as string[]) ?? [],
      blockedPrefixes: (item.blocked_prefixes as string[]) ?? [],
      ...(Array.isArray(item.allowed_countries) && { allowedCountries: item.allowed_countries as string[] }),
    },
    ...(typeof item.rules_version === 'number' && { rulesVersion: item.rules_version }),
    prices: (item.prices as Record<string, number>) ?? {},
    ...(defaultTemplate && { defaultTemplate: templateFromItem(defaultTemplate) }),
    createdAt: item.created_at as string,
    webhookEndpoints:
      item.webhook_endpoints instanceof Set ? [...(item.webhook_endpoints as Set<string>)].sort() : [],
    ...(guardSettingsFromItem(item) && { guard: guardSettingsFromItem(item) }),
    ...(typeof item.guard_version === 'number' && { guardVersion: item.guard_version }),
    ...(typeof item.template_sms_parts === 'number' && { templateSmsParts: item.template_sms_parts }),
    ...(typeof item.api_key_limit === 'number' && { apiKeyLimit: item.api_key_limit }),
    ...(typeof item.active_api_keys === 'number' && { activeApiKeys: item.active_api_keys }),
    ...(typeof item.template_count === 'number' && { templateCount: item.template_count }),
    // Balance of shard 0 only, above, when there are more: the accounts store adds the others.
    ...(typeof item.balance_shards === 'number' &&
      item.balance_shards > 1 && { balanceShards: item.balance_shards }),
  };
}

const templateFields = (t: Template): Item => ({ sid: t.sid, body: t.body, locale: t.locale });

export function templateToItem(serviceSid: string, t: Template): Item {
  return {
    ...keys.template(serviceSid, t.sid),
    type: 'template',
    service_sid: serviceSid,
    ...templateFields(t),
  };
}

export function templateFromItem(item: Item): Template {
  return { sid: item.sid as string, body: item.body as string, locale: item.locale as string };
}

export function apiKeyFromItem(item: Item): ApiKeyRecord {
  return {
    keyHash: item.key_hash as string,
    serviceSid: item.service_sid as string,
    createdAt: item.created_at as string,
    ...(typeof item.revoked_at === 'string' && { revokedAt: item.revoked_at }),
  };
}

export function apiKeyToItems(record: ApiKeyRecord): Item[] {
  const fields = {
    key_hash: record.keyHash,
    service_sid: record.serviceSid,
    created_at: record.createdAt,
    ...(record.revokedAt && { revoked_at: record.revokedAt }),
  };
  return [
    // The per-key limit's counts (store.ts countKeyRequest): the map exists from the start, so the first
    // request's write can count in it.
    { ...keys.apiKey(record.keyHash), type: 'api_key', ...fields, rate_counts: {} },
    { ...keys.serviceApiKey(record.serviceSid, record.keyHash), type: 'service_api_key', ...fields },
  ];
}

export function numberFromItem(e164: string, item: Item | undefined): NumberRecord {
  if (!item) return { e164, sends: [], rejectedUntil: {}, version: 0 };
  const rejectedUntil: NumberRecord['rejectedUntil'] = {};
  for (const channel of CHANNELS) {
    const until = item[rejectedAttribute(channel)];
    if (typeof until === 'number') rejectedUntil[channel] = until;
  }
  const recent = recentFromItem(item.recent);
  return {
    e164,
    sends: (item.sends as number[]) ?? [],
    rejectedUntil,
    ...(recent && { recent }),
    version: (item.version as number | undefined) ?? 0,
  };
}

/** `recent` as stored: service SID → [{ sid, at }] (absent on logs written before it). */
function recentFromItem(value: unknown): NumberRecord['recent'] {
  if (!isItem(value)) return undefined;
  const recent: NonNullable<NumberRecord['recent']> = {};
  for (const [serviceSid, sends] of Object.entries(value))
    if (Array.isArray(sends))
      recent[serviceSid] = sends
        .filter(isItem)
        .map((send) => ({ sid: String(send.sid), at: Number(send.at) }));
  return recent;
}

/** One top-level attribute per channel, so one rejection is a plain SET (a map would need to exist first). */
export const rejectedAttribute = (channel: Channel): string => `rejected_${channel}`;

/**
 * A number's log is kept a day past its last send, or past its last channel rejection, or past the time its
 * service's last sends can make it a known number (`recent`, `KNOWN_NUMBER.forMs`), whichever is latest.
 */
export function numberTtl(
  now: Date,
  rejectedUntil: NumberRecord['rejectedUntil'],
  recent: NumberRecord['recent'] = {},
): number {
  const known = Object.values(recent).flatMap((sends) => sends.map(({ at }) => at + KNOWN_NUMBER.forMs));
  return (
    Math.max(epochSeconds(now), ...[...Object.values(rejectedUntil), ...known].map(epochSeconds)) +
    DAY_SECONDS
  );
}

/** Idempotency keys are remembered for 24 hours. */
export const IDEMPOTENCY_RETENTION_SECONDS = DAY_SECONDS;

export const ttlAfter = (now: Date, seconds: number): number => epochSeconds(now) + seconds;

export function webhookEndpointToItem(e: WebhookEndpoint): Item {
  return {
    ...keys.webhookEndpoint(e.serviceSid, e.sid),
    type: 'webhook_endpoint',
    sid: e.sid,
    service_sid: e.serviceSid,
    url: e.url,
    enabled: e.enabled,
    ...(e.disableCount !== undefined && { disable_count: e.disableCount }),
    created_at: e.createdAt,
    sealed_secret: e.sealedSecret,
    ...(e.previousSealedSecret !== undefined && { previous_sealed_secret: e.previousSealedSecret }),
    ...(e.previousSecretUntil !== undefined && { previous_secret_until: e.previousSecretUntil }),
  };
}

export function webhookEndpointFromItem(item: Item): WebhookEndpoint {
  return {
    sid: item.sid as string,
    serviceSid: item.service_sid as string,
    url: item.url as string,
    enabled: item.enabled === true,
    ...(typeof item.disable_count === 'number' && { disableCount: item.disable_count }),
    createdAt: item.created_at as string,
    sealedSecret: item.sealed_secret as string,
    ...(typeof item.previous_sealed_secret === 'string' && {
      previousSealedSecret: item.previous_sealed_secret,
    }),
    ...(typeof item.previous_secret_until === 'string' && {
      previousSecretUntil: item.previous_secret_until,
    }),
  };
}

/** An audit record as its item; other adapters write one with the change it records. */
export const auditToItem = (record: AuditRecord): Record<string, unknown> => ({
  ...keys.audit(record.serviceSid, record.id),
  type: 'audit',
  audit_id: record.id,
  at: record.at,
  service_sid: record.serviceSid,
  actor: record.actor,
  action: record.action,
  // JSON text: a change's before/after may hold values DynamoDB cannot (empty strings in sets, undefined).
  ...(record.before !== undefined && { before: JSON.stringify(record.before) }),
  ...(record.after !== undefined && { after: JSON.stringify(record.after) }),
  ...(record.requestId && { request_id: record.requestId }),
});

/** An audit record from its item. */
export const auditFromItem = (item: Record<string, unknown>): AuditRecord => ({
  id: item.audit_id as string,
  at: item.at as string,
  serviceSid: item.service_sid as string,
  actor: item.actor as string,
  action: item.action as string,
  ...(typeof item.before === 'string' && { before: JSON.parse(item.before) as unknown }),
  ...(typeof item.after === 'string' && { after: JSON.parse(item.after) as unknown }),
  ...(typeof item.request_id === 'string' && { requestId: item.request_id }),
});
