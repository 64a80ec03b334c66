/**
 * What the accounts core needs from storage: the account store (services, keys, templates, members, the ledger
 * and the audit trail) and the webhook endpoints. The DynamoDB adapters implement them; every change takes the
 * audit record that the store writes in the same transaction, so a change and its record land together.
 */
import type { CountryCaps, GuardLevel } from '../guard/model';
import type { Service, Template } from '../model';
import type { Channel } from '../routing';

/** Who made a change: `console:<user id>` or `cli:<principal>`, and the request it came with. */
export interface ChangeContext {
  actor: string;
  requestId?: string;
}

/** One change to an account, kept under its service; `before`/`after` hold only the fields that changed. */
export interface AuditRecord {
  /** Unique within the service (time-ordered). */
  id: string;
  at: string;
  serviceSid: string;
  actor: string;
  /** e.g. `template.add`, `balance.topup`. */
  action: string;
  before?: unknown;
  after?: unknown;
  requestId?: string;
}

export interface NewService {
  name: string;
  balance: number;
  channels: Channel[];
  /** Text of a default template with `{code}`; none: the service starts without a default template. */
  defaultTemplateBody?: string;
  /** Countries it may send to; absent: every served country but the high-risk ones (`defaultAllowedCountries`). */
  allowedCountries?: string[];
}

export interface IssuedKey {
  /** Shown once; only its hash is stored. */
  apiKey: string;
  /** First characters of the hash: names the key for listing and revoking without revealing it. */
  keyId: string;
}

export interface ApiKeyView {
  keyId: string;
  createdAt: string;
  revokedAt?: string;
  /** The start of the minute the key was last used (its per-key limit window). */
  lastUsedAt?: string;
}

/** A line of the ledger: a charge (an accepted send) or a credit (the opening balance, a top-up). */
export interface ChargeLine {
  at: string;
  verificationSid: string;
  amount: number;
}

export interface CreditLine {
  at: string;
  amount: number;
  /** `opening` (the balance a service was created with), `topup`, or `reconcile` (a balance older than the ledger). */
  reason: 'opening' | 'topup' | 'reconcile';
  /** The audit record of the change that made it. */
  auditId: string;
  /** A top-up's key from its operator: a credit with a key used in the last 24 hours is refused (`TopUpKeyUsed`). */
  topUpKey?: string;
}

/** How long a top-up's key is remembered. */
export const TOP_UP_KEY_HOURS = 24;

/** A top-up's key was used by an earlier credit (of `amount` units) within its 24 hours: this one was not made. */
export class TopUpKeyUsed extends Error {
  override readonly name = 'TopUpKeyUsed';
  constructor(readonly amount: number) {
    super('This top-up key was used by an earlier top-up.');
  }
}

/** A settings change conditioned on a field's value (`updateService`'s `expected`) found it changed: nothing written. */
export class SettingsChanged extends Error {
  override readonly name = 'SettingsChanged';
  constructor() {
    super('The setting changed since it was read.');
  }
}

/** A console user's membership of a service (the console reads it on every request). */
export interface Membership {
  userId: string;
  serviceSid: string;
  /** The service's name when the member was added, for the user's list of services. */
  serviceName: string;
  /** Who the user is, for people (an e-mail address); the user id is what the sign-in token carries. */
  label?: string;
  addedAt: string;
}

/** An entry of the directory of all services (the console's operator view). */
export interface DirectoryEntry {
  serviceSid: string;
  name: string;
  createdAt: string;
}

/** What `updateService` requires of the service item before it writes (each field given: that value). */
export interface ExpectedSettings {
  /** undefined: no caps. */
  guardCaps?: Record<string, CountryCaps> | undefined;
  /** The rules' version (`Service.rulesVersion`; 0: no change of them yet). */
  rulesVersion?: number;
  /** The guard settings' version (`Service.guardVersion`; 0: no change of them yet). */
  guardVersion?: number;
  /** The channels' version (`Service.channelsVersion`; 0: no change of them yet). */
  channelsVersion?: number;
}

/**
 * The service-item fields a plain settings change sets; `undefined` removes the field. A change of any rules list
 * also adds 1 to the rules' version; of the guard's level, safe list or RiskCheck permission, to the guard's; of
 * the enabled channels, to the channels'.
 */
export interface ServiceSettingsChange {
  enabledChannels?: Channel[];
  blockedCountries?: string[];
  blockedPrefixes?: string[];
  allowedCountries?: string[] | undefined;
  riskCheckOptOut?: boolean;
  guardLevel?: GuardLevel;
  /** Numbers and prefixes the guard never blocks. */
  guardSafeList?: string[];
  guardCaps?: Record<string, CountryCaps> | undefined;
  defaultTemplate?: Template | undefined;
  templateSmsParts?: number | undefined;
  apiKeyLimit?: number | undefined;
  /** One country's price (units), or `undefined` to remove it. */
  price?: { country: string; units: number | undefined };
}

/**
 * How a change of a service's keys or templates keeps their count on the service item (`active_api_keys`,
 * `template_count`): `counted` absent, the service item has one, moved by one; present, it has none yet, and the
 * change writes the first, from the items counted before the change.
 */
export interface ItemCount {
  counted?: number;
}

export interface AccountStore {
  getService(serviceSid: string): Promise<Service | undefined>;
  /** The services of these SIDs in their order (undefined: no such service), read together: the operator's list. */
  getServices(serviceSids: readonly string[]): Promise<(Service | undefined)[]>;
  /** Puts the service, its default template, its directory entry and (when it has a balance) the opening credit. */
  createService(service: Service, audit: AuditRecord): Promise<void>;
  /**
   * Adds the key's items (`keyHash` must be new) and counts it on the service item, in one transaction: false,
   * writing nothing, when the count has reached `count.limit`, or (`count.counted`: the active keys of a service
   * with no count yet, counted from their items) when a count began meanwhile, or the service does not exist.
   */
  putApiKey(
    serviceSid: string,
    keyHash: string,
    createdAt: string,
    audit: AuditRecord,
    count: ItemCount & { limit: number },
  ): Promise<boolean>;
  listApiKeys(serviceSid: string): Promise<(ApiKeyView & { keyHash: string })[]>;
  /** With each key's last use (one BatchGetItem per hundred keys). */
  listApiKeysWithUse(serviceSid: string): Promise<ApiKeyView[]>;
  /**
   * Revokes the key and counts it off the service item, in one transaction: false, writing nothing, when the key
   * was revoked meanwhile or (`count.counted`, as for `putApiKey`) a count began meanwhile.
   */
  revokeApiKey(
    serviceSid: string,
    keyHash: string,
    at: string,
    audit: AuditRecord,
    count: ItemCount,
  ): Promise<boolean>;
  /**
   * Adds the line's amount to the balance with the line, in one write; returns the balance after. A `reconcile`
   * line explains a balance older than the ledger and leaves the balance as it is.
   */
  credit(serviceSid: string, line: CreditLine, audit: AuditRecord): Promise<number>;
  /**
   * Spreads the balance evenly over `shards` items (more than it has), moving no money in or out: the balance
   * before equals the balance after.
   */
  setBalanceShards(serviceSid: string, shards: number, audit: AuditRecord): Promise<void>;
  /** False, nothing written: the service holds `limit` templates, or the count was begun by another change. */
  putTemplate(
    serviceSid: string,
    template: Template,
    audit: AuditRecord,
    count: ItemCount & { limit: number },
  ): Promise<boolean>;
  getTemplate(serviceSid: string, templateSid: string): Promise<Template | undefined>;
  listTemplates(serviceSid: string): Promise<Template[]>;
  /** False, nothing written: the template is gone, or the count was begun by another change. */
  deleteTemplate(
    serviceSid: string,
    templateSid: string,
    audit: AuditRecord,
    count: ItemCount,
  ): Promise<boolean>;
  /**
   * Sets (or removes) service-item fields, with their audit records (one per setting changed), in one
   * transaction; the service must exist. With `expected`, only while those fields still hold those values
   * (undefined: absent), else `SettingsChanged` and nothing written.
   */
  updateService(
    serviceSid: string,
    change: ServiceSettingsChange,
    audit: AuditRecord | readonly AuditRecord[],
    expected?: ExpectedSettings,
  ): Promise<void>;
  listCharges(serviceSid: string): Promise<ChargeLine[]>;
  listCredits(serviceSid: string): Promise<CreditLine[]>;
  putMember(membership: Membership, audit: AuditRecord): Promise<void>;
  /** False when the user was not a member. */
  deleteMember(serviceSid: string, userId: string, audit: AuditRecord): Promise<boolean>;
  listMembers(serviceSid: string): Promise<Membership[]>;
  membershipsOf(userId: string): Promise<Membership[]>;
  isMember(userId: string, serviceSid: string): Promise<boolean>;
  /** Whether the table lists the user as an operator (the console also requires the sign-in group). */
  isOperator(userId: string): Promise<boolean>;
  setOperator(userId: string, operator: boolean, audit: AuditRecord): Promise<void>;
  listOperators(): Promise<string[]>;
  listAllServices(): Promise<DirectoryEntry[]>;
  /** A change made elsewhere (webhook endpoints, the guard's settings), recorded after it. */
  putAudit(audit: AuditRecord): Promise<void>;
  /** Newest first. */
  listAudit(serviceSid: string, limit: number): Promise<AuditRecord[]>;
}

/** Makes new API keys: the key, shown once, and the hash it is stored and found by. */
export interface ApiKeyMaker {
  newKey(): Promise<{ apiKey: string; keyHash: string }>;
  /** Settles when a key can be made (the deployment key read), or rejects saying why it cannot. */
  ready(): Promise<void>;
}

/** The audit trail of operator-wide changes (operator rights) is kept under this pseudo-service. */
export const OPERATORS_AUDIT_SCOPE = 'OPERATORS';
