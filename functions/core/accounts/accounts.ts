/**
 * The account use cases: what an owner or an operator does to a service, from the console or the admin command.
 * Each takes already-shaped input, applies the format rules of ./formats.ts, and leaves an audit record with the
 * change (who, what, before and after); money moves only with a ledger line, so the balance can be proven
 * (`balanceAudit`). Errors are `OtpError`s: `invalid_parameter`, `not_found`, `too_many`, `conflict`.
 */
import { OtpError } from '../errors';
import { defaultAllowedCountries } from '../guard/high-risk-countries';
import { DEFAULT_GUARD_SETTINGS, isGuardLevel, type CountryCaps, type GuardLevel } from '../guard/model';
import { withCountryCaps } from '../guard/caps';
import { countriesCoveredBy } from '../guard/prefix';
import type { Service, Template } from '../model';
import type { Clock, Random } from '../ports';
import { CHANNELS, ROUTES, type Channel } from '../routing';
import {
  DEFAULT_API_KEY_LIMIT,
  DEFAULT_TEMPLATE_SMS_PARTS,
  MAX_BLOCKED_PREFIXES,
  MAX_SAFE_LIST,
  keyIdOf,
  parseApiKeyLimit,
  parseE164Prefix,
  parseLocale,
  parseBalanceShards,
  parseTemplateBody,
  parseTopUp,
  parseTopUpKey,
  templateSize,
  type Parsed,
  type TemplateSize,
} from './formats';
import type {
  AccountStore,
  ApiKeyMaker,
  ApiKeyView,
  AuditRecord,
  ChangeContext,
  CreditLine,
  IssuedKey,
  ItemCount,
  Membership,
  NewService,
  ServiceSettingsChange,
} from './ports';
import { OPERATORS_AUDIT_SCOPE, SettingsChanged, TopUpKeyUsed } from './ports';
import { formatUnits } from '../money';

/**
 * A change written only while what it read still holds (a key change, a country's caps) met others of the same
 * service this often before giving up (each time it reads again).
 */
const CONTENDED_CHANGE_ATTEMPTS = 10;

/** Templates a service may hold: far more than its locales need, few enough for one page of them. */
export const MAX_TEMPLATES_PER_SERVICE = 100;

/** A service's channels as stored: in CHANNELS order, each once, whichever driver listed them. */
const channelSet = (channels: readonly Channel[]): Channel[] =>
  CHANNELS.filter((channel) => channels.includes(channel));

export interface AccountsDeps {
  store: AccountStore;
  keys: ApiKeyMaker;
  clock: Clock;
  random: Random;
}

/** The value, or an `invalid_parameter` error with the problem. */
export function valid<T>(parsed: Parsed<T>): T {
  if (!parsed.ok) throw new OtpError('invalid_parameter', parsed.problem);
  return parsed.value;
}

export interface BalanceAudit {
  serviceSid: string;
  balance: number;
  credits: number;
  charges: number;
  /** credits − charges − balance: 0 when the ledger proves the balance. */
  difference: number;
  creditLines: number;
  chargeLines: number;
}

export class Accounts {
  constructor(private readonly deps: AccountsDeps) {}

  get store(): AccountStore {
    return this.deps.store;
  }

  getService(serviceSid: string): Promise<Service | undefined> {
    return this.deps.store.getService(serviceSid);
  }

  getServices(serviceSids: readonly string[]): Promise<(Service | undefined)[]> {
    return this.deps.store.getServices(serviceSids);
  }

  listCharges(serviceSid: string): ReturnType<AccountStore['listCharges']> {
    return this.deps.store.listCharges(serviceSid);
  }

  listApiKeys(serviceSid: string): Promise<ApiKeyView[]> {
    return this.deps.store
      .listApiKeys(serviceSid)
      .then((keys) => keys.map(({ keyHash: _hash, ...view }) => view));
  }

  listTemplates(serviceSid: string): Promise<Template[]> {
    return this.deps.store.listTemplates(serviceSid);
  }

  /** The service, or `not_found`. */
  async service(serviceSid: string): Promise<Service> {
    const service = await this.deps.store.getService(serviceSid);
    if (!service) throw new OtpError('not_found', `No service ${serviceSid}.`);
    return service;
  }

  async createService(context: ChangeContext, input: NewService): Promise<Service> {
    const now = this.deps.clock.now();
    const body =
      input.defaultTemplateBody === undefined
        ? undefined
        : valid(parseTemplateBody(input.defaultTemplateBody));
    const template: Template | undefined = body
      ? { sid: this.deps.random.sid('HX'), body, locale: 'en' }
      : undefined;
    const service: Service = {
      sid: this.deps.random.sid('VA'),
      name: input.name,
      balance: input.balance,
      enabledChannels: channelSet(input.channels),
      rules: {
        blockedCountries: [],
        blockedPrefixes: [],
        allowedCountries: input.allowedCountries ?? defaultAllowedCountries(),
      },
      prices: {},
      ...(template && { defaultTemplate: template }),
      createdAt: now.toISOString(),
      webhookEndpoints: [],
      activeApiKeys: 0,
      templateCount: template ? 1 : 0,
    };
    await this.deps.store.createService(
      service,
      this.changeRecord(context, service.sid, 'service.create', undefined, {
        name: service.name,
        balance: service.balance,
        channels: service.enabledChannels,
        allowedCountries: service.rules.allowedCountries,
        defaultTemplateSid: template?.sid,
      }),
    );
    return service;
  }

  /** Fails now, before anything is written, when this wiring cannot make keys (no deployment key). */
  readyToIssueKeys(): Promise<void> {
    return this.deps.keys.ready();
  }

  /**
   * Issues a key while the service holds fewer active keys than its limit (`too_many` otherwise). The count is
   * kept on the service item in the key's own transaction, so concurrent issues cannot pass the limit together.
   */
  async issueApiKey(context: ChangeContext, serviceSid: string): Promise<IssuedKey> {
    const { apiKey, keyHash } = await this.deps.keys.newKey();
    const keyId = keyIdOf(keyHash);
    for (let attempt = 1; attempt <= CONTENDED_CHANGE_ATTEMPTS; attempt++) {
      const { service, count, active } = await this.keyCount(serviceSid, false);
      const limit = apiKeyLimit(service);
      if (active >= limit)
        throw new OtpError(
          'too_many',
          `The service has ${active} active API key${active === 1 ? '' : 's'} and may hold ${limit}: revoke one first, or have an operator raise the limit (npm run admin -- key limit).`,
        );
      const record = this.changeRecord(context, serviceSid, 'key.issue', undefined, { keyId });
      const now = this.deps.clock.now().toISOString();
      // False: the limit was reached, or the count begun, by another change since the read; read again.
      if (await this.deps.store.putApiKey(serviceSid, keyHash, now, record, { ...count, limit })) {
        return { apiKey, keyId };
      }
    }
    throw new Error("Issuing a key kept meeting other changes of the service's keys");
  }

  /** Revokes a key by its id; a key revoked before stays as it was. `not_found` when the service has no such key. */
  async revokeApiKey(
    context: ChangeContext,
    serviceSid: string,
    keyId: string,
  ): Promise<{ keyId: string; revokedAt: string; alreadyRevoked: boolean }> {
    for (let attempt = 1; attempt <= CONTENDED_CHANGE_ATTEMPTS; attempt++) {
      const { keys, count } = await this.keyCount(serviceSid, true);
      const key = keys.find((k) => k.keyId === keyId);
      if (!key) throw new OtpError('not_found', 'No such API key.');
      if (key.revokedAt) return { keyId, revokedAt: key.revokedAt, alreadyRevoked: true };
      const at = this.deps.clock.now().toISOString();
      const record = this.changeRecord(
        context,
        serviceSid,
        'key.revoke',
        { keyId, active: true },
        { keyId, active: false },
      );
      // False: revoked, or the count begun, by another change since the read; read again.
      if (await this.deps.store.revokeApiKey(serviceSid, key.keyHash, at, record, count)) {
        return { keyId, revokedAt: at, alreadyRevoked: false };
      }
    }
    throw new Error(`Revoking key ${keyId} kept meeting other changes of the service's keys`);
  }

  /**
   * The service's active keys: its item's count, or (a service made before the count) its keys' items counted,
   * for the key change that writes the first count. The keys are read beside the service when the caller needs
   * them (a revoke), and otherwise only where there is no count yet: an issue on a counted service reads one item.
   */
  private async keyCount(
    serviceSid: string,
    withKeys: boolean,
  ): Promise<{
    service: Service;
    keys: (ApiKeyView & { keyHash: string })[];
    count: ItemCount;
    active: number;
  }> {
    const listKeys = () => this.deps.store.listApiKeys(serviceSid);
    const [service, listed] = await Promise.all([
      this.service(serviceSid),
      withKeys ? listKeys() : undefined,
    ]);
    if (service.activeApiKeys !== undefined)
      return { service, keys: listed ?? [], count: {}, active: service.activeApiKeys };
    const keys = listed ?? (await listKeys());
    const counted = keys.filter((key) => !key.revokedAt).length;
    return { service, keys, count: { counted }, active: counted };
  }

  /**
   * Adds to the balance, with a credit line in the ledger; returns the balance after. With a key (the operator's,
   * docs/admin.md), a retry of a top-up that may have been made (an error, a lost answer) credits nothing: the same
   * key and amount within 24 hours answer the balance as it is and `alreadyCredited`, so that the caller does not
   * report money added; another amount is refused.
   */
  async topUp(
    context: ChangeContext,
    serviceSid: string,
    units: number,
    key?: string,
  ): Promise<{ balance: number; alreadyCredited: boolean }> {
    valid(parseTopUp(units));
    if (key !== undefined) valid(parseTopUpKey(key));
    const before = await this.service(serviceSid);
    try {
      const balance = await this.credit(
        context,
        serviceSid,
        units,
        'topup',
        'balance.topup',
        before.balance,
        before.balance + units,
        key,
      );
      return { balance, alreadyCredited: false };
    } catch (error) {
      if (!(error instanceof TopUpKeyUsed)) throw error;
      if (error.amount !== units)
        throw new OtpError(
          'invalid_parameter',
          `This top-up key was used for a top-up of ${formatUnits(error.amount)} USD: use a new key for another amount.`,
        );
      return { balance: (await this.service(serviceSid)).balance, alreadyCredited: true };
    }
  }

  /**
   * Spreads the balance over `shards` items, for a service busier than one item's write limit allows
   * (docs/adr/0014-sharded-balance.md): the whole moves, evenly, in one write with its audit record; sends in
   * flight draw on the new spread. Only ever more shards. Returns the service after.
   */
  async spreadBalance(context: ChangeContext, serviceSid: string, shards: string): Promise<Service> {
    const before = await this.service(serviceSid);
    const current = before.balanceShards ?? 1;
    const count = valid(parseBalanceShards(shards, current));
    if (count !== current) {
      await this.deps.store.setBalanceShards(
        serviceSid,
        count,
        this.changeRecord(context, serviceSid, 'balance.shards', { shards: current }, { shards: count }),
      );
    }
    return this.service(serviceSid);
  }

  /**
   * A service older than the credit ledger: one `reconcile` line for what the ledger does not explain, so that
   * `balanceAudit` proves the balance from here on. Nothing when it already does.
   */
  async reconcileBalance(context: ChangeContext, serviceSid: string): Promise<BalanceAudit> {
    const audit = await this.balanceAudit(serviceSid);
    if (audit.difference !== 0) {
      await this.credit(
        context,
        serviceSid,
        -audit.difference,
        'reconcile',
        'balance.reconcile',
        audit.balance,
        audit.balance,
      );
    }
    return this.balanceAudit(serviceSid);
  }

  /**
   * Whether balance = credits − charges. The balance and the ledger are read one after the other: a send accepted
   * between the reads shows as a difference of its price, gone when read again.
   */
  async balanceAudit(serviceSid: string): Promise<BalanceAudit> {
    const service = await this.service(serviceSid);
    const [charges, credits] = await Promise.all([
      this.deps.store.listCharges(serviceSid),
      this.deps.store.listCredits(serviceSid),
    ]);
    const charged = charges.reduce((sum, line) => sum + line.amount, 0);
    const credited = credits.reduce((sum, line) => sum + line.amount, 0);
    return {
      serviceSid,
      balance: service.balance,
      credits: credited,
      charges: charged,
      difference: credited - charged - service.balance,
      creditLines: credits.length,
      chargeLines: charges.length,
    };
  }

  async addTemplate(
    context: ChangeContext,
    serviceSid: string,
    input: { body: string; locale?: string; makeDefault?: boolean },
  ): Promise<Template> {
    const template = await this.addTemplateItem(context, serviceSid, input);
    if (input.makeDefault) await this.setDefaultTemplate(context, serviceSid, template.sid);
    return template;
  }

  /**
   * A template, while the service holds fewer than `MAX_TEMPLATES_PER_SERVICE` (`too_many` otherwise): each is an
   * item of the shared table and a line of every templates page, and any member may add them. Counted on the
   * service item as keys are (a service made before the count counts its templates' items at its first change).
   */
  private async addTemplateItem(
    context: ChangeContext,
    serviceSid: string,
    input: { body: string; locale?: string },
  ): Promise<Template> {
    for (let attempt = 1; attempt <= CONTENDED_CHANGE_ATTEMPTS; attempt++) {
      const { service, count, templates } = await this.templateCount(serviceSid);
      const body = valid(parseTemplateBody(input.body, smsPartLimit(service)));
      const locale = input.locale === undefined ? 'en' : valid(parseLocale(input.locale));
      if (templates >= MAX_TEMPLATES_PER_SERVICE)
        throw new OtpError(
          'too_many',
          `The service has ${templates} templates and may hold ${MAX_TEMPLATES_PER_SERVICE}: delete one first.`,
        );
      const template: Template = { sid: this.deps.random.sid('HX'), body, locale };
      const record = this.changeRecord(context, serviceSid, 'template.add', undefined, template);
      // False: the limit was reached, or the count begun, by another change since the read; read again.
      const limit = MAX_TEMPLATES_PER_SERVICE;
      if (await this.deps.store.putTemplate(serviceSid, template, record, { ...count, limit }))
        return template;
    }
    throw new Error("Adding a template kept meeting other changes of the service's templates");
  }

  /** The service and how many templates it holds: its count, or its templates' items before the count begins. */
  private async templateCount(
    serviceSid: string,
  ): Promise<{ service: Service; count: ItemCount; templates: number }> {
    const service = await this.service(serviceSid);
    if (service.templateCount !== undefined) return { service, count: {}, templates: service.templateCount };
    const counted = (await this.deps.store.listTemplates(serviceSid)).length;
    return { service, count: { counted }, templates: counted };
  }

  /** The service's templates, each with its SMS size against the service's limit (older ones may exceed it). */
  async templates(
    serviceSid: string,
  ): Promise<{ service: Service; templates: (Template & { sms: TemplateSize })[] }> {
    const [service, templates] = await Promise.all([
      this.service(serviceSid),
      this.deps.store.listTemplates(serviceSid),
    ]);
    const limit = smsPartLimit(service);
    return { service, templates: templates.map((t) => ({ ...t, sms: templateSize(t.body, limit) })) };
  }

  async setDefaultTemplate(context: ChangeContext, serviceSid: string, templateSid: string): Promise<void> {
    const [service, template] = await Promise.all([
      this.service(serviceSid),
      this.deps.store.getTemplate(serviceSid, templateSid),
    ]);
    if (!template) throw new OtpError('not_found', 'No such template.');
    await this.change(
      context,
      service,
      'template.default',
      { defaultTemplate: template },
      {
        defaultTemplateSid: service.defaultTemplate?.sid,
      },
      { defaultTemplateSid: template.sid },
    );
  }

  async clearDefaultTemplate(context: ChangeContext, serviceSid: string): Promise<void> {
    const service = await this.service(serviceSid);
    await this.change(
      context,
      service,
      'template.default',
      { defaultTemplate: undefined },
      {
        defaultTemplateSid: service.defaultTemplate?.sid,
      },
      { defaultTemplateSid: undefined },
    );
  }

  async deleteTemplate(context: ChangeContext, serviceSid: string, templateSid: string): Promise<void> {
    for (let attempt = 1; attempt <= CONTENDED_CHANGE_ATTEMPTS; attempt++) {
      const [template, { service, count }] = await Promise.all([
        this.deps.store.getTemplate(serviceSid, templateSid),
        this.templateCount(serviceSid),
      ]);
      if (!template) throw new OtpError('not_found', 'No such template.');
      // Sends without a TemplateSid use the default: it goes only once another is the default, or none.
      if (service.defaultTemplate?.sid === templateSid)
        throw new OtpError(
          'invalid_parameter',
          `${templateSid} is the default template: make another one the default first.`,
        );
      const record = this.changeRecord(context, serviceSid, 'template.delete', template, undefined);
      // False: deleted, or the count begun, by another change since the read; read again.
      if (await this.deps.store.deleteTemplate(serviceSid, templateSid, record, count)) return;
    }
    throw new Error(`Deleting template ${templateSid} kept meeting other changes of the service's templates`);
  }

  /** The SMS parts a template of this service may take (an operator's decision). */
  async setTemplateSmsParts(
    context: ChangeContext,
    serviceSid: string,
    parts: number | undefined,
  ): Promise<void> {
    const service = await this.service(serviceSid);
    await this.change(
      context,
      service,
      'template.limit',
      { templateSmsParts: parts },
      {
        templateSmsParts: smsPartLimit(service),
      },
      { templateSmsParts: parts ?? DEFAULT_TEMPLATE_SMS_PARTS },
    );
  }

  /**
   * How many active API keys the service may hold (an operator's decision); `undefined`: the default. Answers the
   * limit now in force.
   */
  async setApiKeyLimit(
    context: ChangeContext,
    serviceSid: string,
    limit: number | undefined,
  ): Promise<number> {
    if (limit !== undefined) valid(parseApiKeyLimit(String(limit)));
    const service = await this.service(serviceSid);
    const inForce = apiKeyLimit({ ...service, apiKeyLimit: limit });
    await this.change(
      context,
      service,
      'key.limit',
      { apiKeyLimit: limit },
      { apiKeyLimit: apiKeyLimit(service) },
      { apiKeyLimit: inForce },
    );
    return inForce;
  }

  /**
   * The enabled channels, the whole list. With `readVersion` (the `channelsVersion` of the copy the list was made
   * on), a list made on a copy older than the channels is refused (`conflict`) and changes nothing, as `setRules`
   * refuses rules; without, it is written over a fresh read.
   */
  async setChannels(
    context: ChangeContext,
    serviceSid: string,
    given: Channel[],
    readVersion?: number,
  ): Promise<Service> {
    const channels = channelSet(given);
    return this.versionedChange(serviceSid, VERSIONED.channels, readVersion, (service) => ({
      change: { enabledChannels: channels },
      records: [
        this.changeRecord(
          context,
          serviceSid,
          'channels.set',
          { channels: service.enabledChannels },
          { channels },
        ),
      ],
    }));
  }

  /**
   * The delivery rules: countries are served ones (ISO alpha-2, upper case), lists kept sorted and without
   * repeats. Each list: absent leaves it; `allowedCountries: null` removes the allow-list (every served country).
   * The lists given are whole, made from a copy of the rules: with `readVersion` (that copy's `rulesVersion`), a
   * change made on a copy older than the rules is refused (`conflict`) and changes nothing, so that it cannot undo
   * the changes made since. The write holds only while the rules are the ones read, so the audit record's
   * `before` is what the change replaced.
   */
  async setRules(
    context: ChangeContext,
    serviceSid: string,
    rules: { blockedCountries?: string[]; blockedPrefixes?: string[]; allowedCountries?: string[] | null },
    readVersion?: number,
  ): Promise<Service> {
    const unknown = [...(rules.blockedCountries ?? []), ...(rules.allowedCountries ?? [])].filter(
      (c) => !ROUTES[c],
    );
    if (unknown.length > 0)
      throw new OtpError('invalid_parameter', `Not a served country: ${unknown.join(', ')}`);
    const sorted = (list: string[]) => [...new Set(list)].sort();
    const change = {
      ...(rules.blockedCountries && { blockedCountries: sorted(rules.blockedCountries) }),
      ...(rules.blockedPrefixes && { blockedPrefixes: sorted(rules.blockedPrefixes) }),
      ...(rules.allowedCountries !== undefined && {
        allowedCountries: rules.allowedCountries === null ? undefined : sorted(rules.allowedCountries),
      }),
    };
    const after = {
      ...change,
      ...('allowedCountries' in change && { allowedCountries: change.allowedCountries ?? null }),
    };
    return this.versionedChange(serviceSid, VERSIONED.rules, readVersion, (service) => {
      // A list held from before the limit may still shrink; it may not grow past it.
      const prefixes = change.blockedPrefixes?.length ?? 0;
      if (prefixes > MAX_BLOCKED_PREFIXES && prefixes > service.rules.blockedPrefixes.length)
        throw new OtpError(
          'invalid_parameter',
          `A service holds at most ${MAX_BLOCKED_PREFIXES} blocked prefixes: unblock one first.`,
        );
      const before = {
        ...(change.blockedCountries && { blockedCountries: service.rules.blockedCountries }),
        ...(change.blockedPrefixes && { blockedPrefixes: service.rules.blockedPrefixes }),
        ...('allowedCountries' in change && { allowedCountries: service.rules.allowedCountries ?? null }),
      };
      return { change, records: [this.changeRecord(context, serviceSid, 'rules.set', before, after)] };
    });
  }

  async setRiskCheckOptOut(context: ChangeContext, serviceSid: string, allowed: boolean): Promise<Service> {
    return this.setGuardSettings(context, serviceSid, { riskCheckOptOut: allowed });
  }

  /** The guard's level (docs/guard.md, "Levels"). */
  async setGuardLevel(context: ChangeContext, serviceSid: string, level: GuardLevel): Promise<Service> {
    return this.setGuardSettings(context, serviceSid, { level });
  }

  /**
   * The numbers and prefixes the guard never blocks (E.164 prefixes; the list replaces the one before), made on
   * the copy of version `readVersion` when given (`setGuardSettings`).
   */
  async setGuardSafeList(
    context: ChangeContext,
    serviceSid: string,
    safeList: string[],
    readVersion?: number,
  ): Promise<Service> {
    return this.setGuardSettings(context, serviceSid, { safeList }, readVersion);
  }

  /**
   * The guard's level, safe list and RiskCheck permission, any of them: every one given is checked before
   * anything is written, then all are written in one transaction, each with its own audit record
   * (`guard.level`, `guard.safelist`, `guard.risk_check`). With `readVersion` (the `guardVersion` of the copy
   * they were made on), settings made on a copy older than the guard's are refused (`conflict`) and change
   * nothing, as `setRules` refuses rules; without, they are written over a fresh read.
   */
  async setGuardSettings(
    context: ChangeContext,
    serviceSid: string,
    settings: { level?: GuardLevel; safeList?: string[]; riskCheckOptOut?: boolean },
    readVersion?: number,
  ): Promise<Service> {
    const { level, safeList, riskCheckOptOut } = settings;
    if (level !== undefined && !isGuardLevel(level))
      throw new OtpError('invalid_parameter', `Not a guard level: ${String(level)}`);
    let nextSafeList: string[] | undefined;
    if (safeList !== undefined) {
      const bad = safeList.map(parseE164Prefix).find((parsed) => !parsed.ok);
      if (bad && !bad.ok) throw new OtpError('invalid_parameter', bad.problem);
      nextSafeList = [...new Set(safeList)].sort();
      if (nextSafeList.length > MAX_SAFE_LIST)
        throw new OtpError('invalid_parameter', `A safe list holds at most ${MAX_SAFE_LIST} entries.`);
    }
    return this.versionedChange(serviceSid, VERSIONED.guard, readVersion, (service) => {
      if (nextSafeList !== undefined) refuseWholeCountries(nextSafeList, service.guard?.safeList ?? []);
      const change: ServiceSettingsChange = {};
      const records: AuditRecord[] = [];
      const record = (action: string, before: unknown, after: unknown) =>
        records.push(this.changeRecord(context, serviceSid, action, before, after));
      if (level !== undefined) {
        change.guardLevel = level;
        record('guard.level', { level: service.guard?.level ?? DEFAULT_GUARD_SETTINGS.level }, { level });
      }
      if (nextSafeList !== undefined) {
        change.guardSafeList = nextSafeList;
        record('guard.safelist', { safeList: service.guard?.safeList ?? [] }, { safeList: nextSafeList });
      }
      if (riskCheckOptOut !== undefined) {
        change.riskCheckOptOut = riskCheckOptOut;
        record(
          'guard.risk_check',
          { riskCheckOptOut: service.guard?.riskCheckOptOut === true },
          { riskCheckOptOut },
        );
      }
      return records.length === 0 ? undefined : { change, records };
    });
  }

  /**
   * A change of one versioned group of a service's settings (`group`), made by `make` from the service as read
   * (undefined: nothing to change) and written only while the group's version is still the one read. With
   * `readVersion` (the version of the copy the caller made its change on: a page, a command's read), a copy older
   * than the group is refused (`conflict`) and nothing changes, so that it cannot undo the changes made since;
   * without, a change that met another is made again over a fresh read, so its records' `before` is what it
   * replaced.
   */
  private async versionedChange(
    serviceSid: string,
    group: VersionedGroup,
    readVersion: number | undefined,
    make: (service: Service) => { change: ServiceSettingsChange; records: AuditRecord[] } | undefined,
  ): Promise<Service> {
    for (let attempt = 1; attempt <= CONTENDED_CHANGE_ATTEMPTS; attempt++) {
      const service = await this.service(serviceSid);
      const version = service[group.field] ?? 0;
      if (readVersion !== undefined && readVersion !== version) throw stale(group.name);
      const made = make(service);
      if (!made) return service;
      try {
        await this.deps.store.updateService(serviceSid, made.change, made.records, {
          [group.field]: version,
        });
        return this.service(serviceSid);
      } catch (error) {
        if (!(error instanceof SettingsChanged)) throw error;
        if (readVersion !== undefined) throw stale(group.name);
      }
    }
    throw new Error(`Changing the ${group.name} kept meeting other changes of them`);
  }

  /**
   * One country's caps (validated by core/guard/caps.ts), made by `change` from the ones it has (undefined:
   * none; answering undefined removes them). The service's caps are one map, so the write holds only while the
   * map is still the one read; otherwise it is read again: two people saving two countries at once keep both.
   * Answers every country's caps after the change.
   */
  async changeCountryCaps(
    context: ChangeContext,
    serviceSid: string,
    country: string,
    change: (entry: CountryCaps | undefined) => CountryCaps | undefined,
  ): Promise<Record<string, CountryCaps> | undefined> {
    for (let attempt = 1; attempt <= CONTENDED_CHANGE_ATTEMPTS; attempt++) {
      const service = await this.service(serviceSid);
      const before = service.guard?.caps;
      const after = withCountryCaps(before, country, change(before?.[country]));
      const record = this.changeRecord(
        context,
        serviceSid,
        'guard.caps',
        { caps: before ?? null },
        { caps: after ?? null },
      );
      try {
        await this.deps.store.updateService(serviceSid, { guardCaps: after }, record, { guardCaps: before });
        return after;
      } catch (error) {
        if (!(error instanceof SettingsChanged)) throw error;
      }
    }
    throw new Error(`Changing the caps of ${country} kept meeting other changes of the service's caps`);
  }

  /** A customer price for one country (units), or `undefined` to go back to the list price. */
  async setPrice(
    context: ChangeContext,
    serviceSid: string,
    country: string,
    units: number | undefined,
  ): Promise<void> {
    const service = await this.service(serviceSid);
    await this.change(
      context,
      service,
      units === undefined ? 'price.remove' : 'price.set',
      {
        price: { country, units },
      },
      { country, price: service.prices[country] ?? null },
      { country, price: units ?? null },
    );
  }

  async addMember(
    context: ChangeContext,
    serviceSid: string,
    userId: string,
    label?: string,
  ): Promise<Membership> {
    const service = await this.service(serviceSid);
    const membership: Membership = {
      userId,
      serviceSid,
      serviceName: service.name,
      ...(label && { label }),
      addedAt: this.deps.clock.now().toISOString(),
    };
    await this.deps.store.putMember(
      membership,
      this.changeRecord(context, serviceSid, 'member.add', undefined, { userId, label }),
    );
    return membership;
  }

  async removeMember(context: ChangeContext, serviceSid: string, userId: string): Promise<boolean> {
    return this.deps.store.deleteMember(
      serviceSid,
      userId,
      this.changeRecord(context, serviceSid, 'member.remove', { userId }, undefined),
    );
  }

  /** Operator rights, kept in the table so that removing them takes effect at the user's next request. */
  async setOperator(context: ChangeContext, userId: string, operator: boolean): Promise<void> {
    await this.deps.store.setOperator(
      userId,
      operator,
      this.changeRecord(
        context,
        OPERATORS_AUDIT_SCOPE,
        operator ? 'operator.add' : 'operator.remove',
        undefined,
        {
          userId,
        },
      ),
    );
  }

  /** A change made through another store (webhook endpoints, the guard's settings), recorded after it. */
  async recordChange(
    context: ChangeContext,
    serviceSid: string,
    action: string,
    before: unknown,
    after: unknown,
  ): Promise<void> {
    await this.deps.store.putAudit(this.changeRecord(context, serviceSid, action, before, after));
  }

  async auditTrail(serviceSid: string, limit = 100): Promise<AuditRecord[]> {
    return this.deps.store.listAudit(serviceSid, limit);
  }

  private async credit(
    context: ChangeContext,
    serviceSid: string,
    units: number,
    reason: CreditLine['reason'],
    action: string,
    balanceBefore: number,
    expectedAfter?: number,
    topUpKey?: string,
  ): Promise<number> {
    const audit = this.changeRecord(
      context,
      serviceSid,
      action,
      { balance: balanceBefore },
      {
        credit: units,
        ...(expectedAfter !== undefined && { balance: expectedAfter }),
      },
    );
    return this.deps.store.credit(
      serviceSid,
      { at: audit.at, amount: units, reason, auditId: audit.id, ...(topUpKey !== undefined && { topUpKey }) },
      audit,
    );
  }

  private async change(
    context: ChangeContext,
    service: Service,
    action: string,
    change: Parameters<AccountStore['updateService']>[1],
    before: unknown,
    after: unknown,
  ): Promise<void> {
    await this.deps.store.updateService(
      service.sid,
      change,
      this.changeRecord(context, service.sid, action, before, after),
    );
  }

  /**
   * The record of a change, written by the store with the change itself (in its transaction); another adapter's
   * change takes it too (a guard lift by hand).
   */
  changeRecord(
    context: ChangeContext,
    serviceSid: string,
    action: string,
    before: unknown,
    after: unknown,
  ): AuditRecord {
    const at = this.deps.clock.now().toISOString();
    return {
      // Time-ordered and unique: the time, then 128 random bits.
      id: `${at}#${this.deps.random.sid('VE').slice(2)}`,
      at,
      serviceSid,
      actor: context.actor,
      action,
      ...(before !== undefined && { before }),
      ...(after !== undefined && { after }),
      ...(context.requestId && { requestId: context.requestId }),
    };
  }
}

/** A change made on an older copy of the settings it sets (their version moved since). */
/** The groups of settings a page sends whole, each counted by its own version on the service item. */
interface VersionedGroup {
  name: string;
  field: 'rulesVersion' | 'guardVersion' | 'channelsVersion';
}
const VERSIONED = {
  rules: { name: 'rules', field: 'rulesVersion' },
  guard: { name: 'guard settings', field: 'guardVersion' },
  channels: { name: 'channels', field: 'channelsVersion' },
} as const satisfies Record<string, VersionedGroup>;

const stale = (settings: string) =>
  new OtpError(
    'conflict',
    `The ${settings} changed since they were read: read them again and make the change there.`,
  );

export const smsPartLimit = (service: Service): number =>
  service.templateSmsParts ?? DEFAULT_TEMPLATE_SMS_PARTS;

export const apiKeyLimit = (service: Service): number => service.apiKeyLimit ?? DEFAULT_API_KEY_LIMIT;

/**
 * A safe-list entry is a number or a range of the owner's own (`+447400`), never a whole country: `+1` would let
 * every NANP number past the guard and feed none of their sends to its signals. An entry already on the list
 * (added before this rule) stays; the level is the switch for a whole service.
 */
function refuseWholeCountries(safeList: string[], current: string[]): void {
  for (const entry of safeList) {
    if (current.includes(entry)) continue;
    const countries = countriesCoveredBy(entry);
    if (countries.length === 0) continue;
    // Many countries share a code (+1: 25 of them): only the served ones among them are named.
    const served = countries.filter((country) => ROUTES[country]);
    const listed =
      countries.length <= 6
        ? countries.join(', ')
        : served.length > 0
          ? `${served.join(', ')} among them`
          : '';
    const which =
      countries.length === 1 ? countries[0] : `${countries.length} countries${listed && ` (${listed})`}`;
    throw new OtpError(
      'invalid_parameter',
      `${entry} covers every number of ${which}: the safe list takes your own numbers and ranges (e.g. +447400); the level off stops the guard for a whole service.`,
    );
  }
}
