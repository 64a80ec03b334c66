import { createHash } from 'node:crypto';
import { OPERATORS_AUDIT_SCOPE } from '../../core/accounts/ports';
import { GLOBAL_SCOPE } from '../../core/guard/consumer';

/**
 * The single table's shape and every key in it. Nothing else builds a key; the CDK stack and the local
 * stack create the table from `TABLE_SCHEMA`, so code and infrastructure cannot drift.
 */
export const TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  /**
   * The change stream feeds the webhook events (a transactional outbox): old and new images, so an event is the
   * difference between them and no request writes anything extra for it.
   */
  streamViewType: 'NEW_AND_OLD_IMAGES',
  // No secondary index: the sweeper finds the sends it looks at in the ledger (core/sweeper.ts).
} as const;

export interface ItemKey {
  pk: string;
  sk: string;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The partition-key prefix of each item family. The key builders below use these, and the CDK stack limits
 * each function's table access to the families it touches (`dynamodb:LeadingKeys` conditions), so a new
 * family or a renamed prefix shows up in both.
 */
export const PARTITION_FAMILY = {
  /**
   * The service item and everything under it: templates, charge lines, key pointers, webhook endpoints.
   */
  service: 'SERVICE#',
  /** An API key's own item, found by the key's hash. */
  apiKey: 'APIKEY#',
  verification: 'VERIFICATION#',
  idempotency: 'IDEMPOTENCY#',
  /** A phone number's send log and unreachable mark, shared by every service. */
  number: 'NUMBER#',
  /** A provider's signed-callback token id, remembered (TTL) so that a replayed callback is refused. */
  receiptToken: 'RECEIPTTOKEN#',
  /**
   * The pumping guard's state, per scope (a service SID, or `GLOBAL` for all services): what the send path reads
   * (blocks, established ranges), and the signal aggregates only the guard's stream consumer reads.
   */
  guard: 'GUARD#',
  /**
   * A service's webhook delivery records, in a partition of their own: the webhook sender may put them, and
   * with LeadingKeys on this family it can write no service item (balance, endpoints).
   */
  webhookDelivery: 'WEBHOOKDELIVERY#',
  /** A console user's memberships (`MEMBER#<user id>` / `SERVICE#<VA>`), read when the user signs in. */
  member: 'MEMBER#',
  /**
   * Lists of every service (`DIRECTORY#services` / `SERVICE#<VA>`): the console operator's, and the sweeper's
   * way to each service's ledger.
   */
  directory: 'DIRECTORY#',
  /** The sweeper's cursor through the ledger (core/sweeper.ts): one item. */
  sweep: 'SWEEP#',
  /**
   * A console user's request counts (the console's per-user limit), one item per minute with `ttl`: the console
   * may write here and nothing else of the user's, so it cannot write a membership.
   */
  consoleUser: 'CONSOLEUSER#',
} as const;
export type PartitionFamily = keyof typeof PARTITION_FAMILY;

const P = PARTITION_FAMILY;

const ledgerPartition = (serviceSid: string, shard: number): string =>
  shard === 0 ? `${P.service}${serviceSid}` : `${P.service}${serviceSid}#${shard}`;

const guardCountryPartition = (scope: string, country: string): string =>
  scope === GLOBAL_SCOPE
    ? `${PARTITION_FAMILY.guard}${GLOBAL_SCOPE}#${country}`
    : `${PARTITION_FAMILY.guard}${scope}`;

export const keys = {
  service: (serviceSid: string): ItemKey => ({ pk: `${P.service}${serviceSid}`, sk: 'SERVICE' }),
  /** Templates live under their service, so a `TemplateSid` of another service is simply not found. */
  template: (serviceSid: string, templateSid: string): ItemKey => ({
    pk: `${P.service}${serviceSid}`,
    sk: `TEMPLATE#${templateSid}`,
  }),
  /**
   * One part of a service's balance (docs/adr/0014-sharded-balance.md): part 0 is the service item's own
   * `balance`; parts 1 and up are items of their own, each in a partition of its own, so that one busy service's
   * sends spread their writes over several partitions.
   */
  balanceShard: (serviceSid: string, shard: number): ItemKey =>
    shard === 0 ? keys.service(serviceSid) : { pk: ledgerPartition(serviceSid, shard), sk: 'BALANCE' },
  /** The partition of a balance shard, where the charges it paid are kept: the service's own for shard 0. */
  ledgerPartition: (serviceSid: string, shard: number): string => ledgerPartition(serviceSid, shard),
  /** Ledger line of one charge, in time order in the partition of the balance shard that paid it. */
  charge: (serviceSid: string, at: Date, verificationSid: string, shard = 0): ItemKey => ({
    pk: ledgerPartition(serviceSid, shard),
    sk: `${SERVICE_CHILD_PREFIX.charge}${at.toISOString()}#${verificationSid}`,
  }),
  /** Ledger line of one credit (the opening balance, a top-up), in time order under the service. */
  credit: (serviceSid: string, auditId: string): ItemKey => ({
    pk: `${P.service}${serviceSid}`,
    sk: `${SERVICE_CHILD_PREFIX.credit}${auditId}`,
  }),
  /**
   * An operator's key for one top-up, kept 24 hours: the same key again credits nothing (docs/admin.md). Hashed as
   * the send's Idempotency-Key is.
   */
  topUpKey: (serviceSid: string, key: string): ItemKey => ({
    pk: `${P.service}${serviceSid}`,
    sk: `${SERVICE_CHILD_PREFIX.topUpKey}${sha256(key)}`,
  }),
  /**
   * One change to the account (who, what, before, after), in time order under the service; operator-wide
   * changes (`OPERATORS_AUDIT_SCOPE`) under the directory of operators.
   */
  audit: (scope: string, auditId: string): ItemKey => ({
    pk: scope === OPERATORS_AUDIT_SCOPE ? `${P.directory}operators` : `${P.service}${scope}`,
    sk: `${SERVICE_CHILD_PREFIX.audit}${auditId}`,
  }),
  /** A console user with operator rights (the sign-in group is required as well). */
  operator: (userId: string): ItemKey => ({ pk: `${P.directory}operators`, sk: `OPERATOR#${userId}` }),
  /** The service's pointer to one of its API keys, for listing and revoking. */
  serviceApiKey: (serviceSid: string, keyHash: string): ItemKey => ({
    pk: `${P.service}${serviceSid}`,
    sk: `APIKEY#${keyHash}`,
  }),
  /** Looked up by the SHA-256 of the key; the key itself is never stored. */
  apiKey: (keyHash: string): ItemKey => ({ pk: `${P.apiKey}${keyHash}`, sk: 'APIKEY' }),
  verification: (verificationSid: string): ItemKey => ({
    pk: `${P.verification}${verificationSid}`,
    sk: 'VERIFICATION',
  }),
  /** Hashed so that any 191-character key makes a short, safe partition key. */
  idempotency: (serviceSid: string, idempotencyKey: string): ItemKey => ({
    pk: `${P.idempotency}${serviceSid}#${sha256(idempotencyKey)}`,
    sk: 'IDEMPOTENCY',
  }),
  /** Shared by every service: the per-number limits count sends from any account. */
  number: (e164: string): ItemKey => ({ pk: `${P.number}${e164}`, sk: 'NUMBER' }),
  /** A spent signed-callback token (`<provider>#<jti>`), hashed to a short, safe key. */
  receiptToken: (tokenId: string): ItemKey => ({
    pk: `${P.receiptToken}${sha256(tokenId)}`,
    sk: 'RECEIPTTOKEN',
  }),
  /** A webhook endpoint, under its service so that one query finds all of a service's endpoints. */
  webhookEndpoint: (serviceSid: string, endpointSid: string): ItemKey => ({
    pk: `${P.service}${serviceSid}`,
    sk: `WEBHOOK#${endpointSid}`,
  }),
  /**
   * One webhook delivery attempt's outcome, in its service's delivery partition in time order (the console's
   * recent deliveries, newest first, and one verification's by time range); `ttl` 7 days. Never the payload or a
   * secret. An event has the same id for every endpoint, so the endpoint is part of the key.
   */
  webhookDelivery: (
    serviceSid: string,
    at: Date,
    eventId: string,
    endpointSid: string,
    attempt: number,
  ): ItemKey => ({
    pk: `${P.webhookDelivery}${serviceSid}`,
    sk: `${at.toISOString()}#${eventId}#${endpointSid}#${attempt}`,
  }),
  /** The partition of a service's delivery records (every item in it is one), for the newest-first Query. */
  webhookDeliveries: (serviceSid: string): Pick<ItemKey, 'pk'> => ({
    pk: `${P.webhookDelivery}${serviceSid}`,
  }),
  /** The sort-key bounds (inclusive) of the delivery records made from `from` to `to`, for a BETWEEN query. */
  webhookDeliveryRange: (serviceSid: string, from: Date, to: Date) => ({
    pk: `${P.webhookDelivery}${serviceSid}`,
    skFrom: from.toISOString(),
    // `~` sorts after `#`: every record of the last millisecond is inside.
    skTo: `${to.toISOString()}~`,
  }),
  /** A console user's membership of a service, under the user: one query lists the user's services. */
  member: (userId: string, serviceSid: string): ItemKey => ({
    pk: `${P.member}${userId}`,
    sk: `${P.service}${serviceSid}`,
  }),
  /** The same membership under the service, for listing a service's members. */
  serviceMember: (serviceSid: string, userId: string): ItemKey => ({
    pk: `${P.service}${serviceSid}`,
    sk: `MEMBER#${userId}`,
  }),
  /** The service's entry in the directory of all services (the console's operator view; never a Scan). */
  serviceDirectory: (serviceSid: string): ItemKey => ({
    pk: `${P.directory}services`,
    sk: `${P.service}${serviceSid}`,
  }),
  /**
   * The guard state a send to `country` reads for `scope` (a service SID or `GLOBAL`): blocks, known ranges.
   * The global scope has a partition per country, so every country's sends do not meet on one key.
   */
  guardCountry: (scope: string, country: string): ItemKey => ({
    pk: guardCountryPartition(scope, country),
    sk: `COUNTRY#${country}`,
  }),
  /** The guard state a send reads for `scope` across countries: known countries, cross-country blocks. */
  guardScope: (scope: string): ItemKey => ({ pk: `${P.guard}${scope}`, sk: 'SCOPE' }),
  /** The signal aggregates of `scope` in `country` (the stream consumer's alone; never read by a send). */
  guardCountryStats: (scope: string, country: string): ItemKey => ({
    pk: guardCountryPartition(scope, country),
    sk: `STATS#${country}`,
  }),
  /** The signal aggregates of `scope` across countries, and its report of decisions. */
  guardScopeStats: (scope: string): ItemKey => ({ pk: `${P.guard}${scope}`, sk: 'STATS' }),
  /**
   * The sort-key bounds (inclusive) of one balance shard's charge lines written from `from` to `to`, for a
   * BETWEEN query (a sharded service's ledger is the union of its shards' ranges).
   */
  chargeRange: (serviceSid: string, from: Date, to: Date, shard = 0) => ({
    pk: ledgerPartition(serviceSid, shard),
    skFrom: `${SERVICE_CHILD_PREFIX.charge}${from.toISOString()}`,
    // `~` sorts after `#` and every SID character: the lines of the last millisecond are inside.
    skTo: `${SERVICE_CHILD_PREFIX.charge}${to.toISOString()}~`,
  }),
  /** The send a charge line's sort key names: `CHARGE#<time>#<sid>`. */
  chargedSend: (chargeSortKey: string): { sid: string; at: string } => {
    const [, at = '', sid = ''] = chargeSortKey.split('#');
    return { sid, at };
  },
  /** The sweeper's cursor. */
  sweepCursor: (): ItemKey => ({ pk: `${P.sweep}cursor`, sk: 'CURSOR' }),
  /** A console user's request count in the one-minute window starting at `windowStart` (epoch minutes). */
  consoleRequests: (userId: string, windowStart: Date): ItemKey => ({
    pk: `${P.consoleUser}${userId}`,
    sk: `REQUESTS#${Math.floor(windowStart.getTime() / 60_000)}`,
  }),
} as const;

/** Sort-key prefixes for the queries under one service. */
export const SERVICE_CHILD_PREFIX = {
  template: 'TEMPLATE#',
  charge: 'CHARGE#',
  apiKey: 'APIKEY#',
  webhookEndpoint: 'WEBHOOK#',
  member: 'MEMBER#',
  credit: 'CREDIT#',
  topUpKey: 'TOPUP#',
  audit: 'AUDIT#',
} as const;
