/**
 * The guard's storage in memory, with the same version checks as `DynamoGuardStore`: unit tests of the guard's
 * consumer, and the memory store's send context (`MemoryStore.guard`).
 */
import {
  GLOBAL_SCOPE,
  countryKey,
  type CountryKey,
  type CountryRecord,
  type GuardBatch,
  type GuardSignalStore,
  type SavedRecords,
  type ScopeRecord,
} from '../../core/guard/consumer';
import type { GuardView } from '../../core/guard/model';
import type { ServiceGuardSettings } from '../../core/model';

const clone = <T>(value: T): T => structuredClone(value);

export class MemoryGuardStore implements GuardSignalStore {
  private readonly countries = new Map<string, CountryRecord>();
  private readonly scopes = new Map<string, ScopeRecord>();

  /**
   * `settingsOf`: a service's guard settings (the memory store's service records); `serviceCount`: how many
   * services the deployment has (without it, as many as the global scope needs: unit tests of it need not make
   * services).
   */
  constructor(
    private readonly settingsOf: (serviceSid: string) => ServiceGuardSettings | undefined = () => undefined,
    private readonly serviceCount?: () => number,
  ) {}

  async servicesUpTo(limit: number): Promise<number> {
    return Math.min(this.serviceCount?.() ?? limit, limit);
  }

  async load(countries: CountryKey[], scopes: string[]): Promise<GuardBatch> {
    const batch: GuardBatch = { countries: new Map(), scopes: new Map(), caps: new Map(), strict: new Set() };
    for (const scope of scopes) {
      const settings = this.settingsOf(scope);
      if (settings?.caps) batch.caps!.set(scope, clone(settings.caps));
      if (settings?.level === 'strict') batch.strict!.add(scope);
    }
    for (const { scope, country } of countries) {
      const record = this.countries.get(countryKey(scope, country));
      if (record) batch.countries.set(countryKey(scope, country), clone(record));
    }
    for (const scope of scopes) {
      const record = this.scopes.get(scope);
      if (record) batch.scopes.set(scope, clone(record));
    }
    return batch;
  }

  /** Each record on its own version, as the DynamoDB store writes them. */
  async save(batch: GuardBatch): Promise<SavedRecords> {
    const written = new Set<string>();
    let complete = true;
    const write = <T extends { version: number }>(stored: Map<string, T>, key: string, record: T) => {
      if ((stored.get(key)?.version ?? 0) !== record.version) {
        complete = false;
        return;
      }
      stored.set(key, clone({ ...record, version: record.version + 1 }));
      written.add(key);
    };
    for (const [key, record] of batch.countries) write(this.countries, key, record);
    for (const [key, record] of batch.scopes) write(this.scopes, key, record);
    return { complete, written };
  }

  /** The stored records, for tests. */
  country(scope: string, country: string): CountryRecord | undefined {
    const record = this.countries.get(countryKey(scope, country));
    return record && clone(record);
  }

  scope(scope: string): ScopeRecord | undefined {
    const record = this.scopes.get(scope);
    return record && clone(record);
  }

  /** Replaces a stored state (an operator's hand edit in tests), moving the version on. */
  editCountryState(scope: string, country: string, edit: (state: CountryRecord['state']) => void): void {
    const record = this.countries.get(countryKey(scope, country));
    if (!record) return;
    edit(record.state);
    record.version += 1;
  }

  /** What a send of `serviceSid` to `country` reads (the DynamoDB store's three guard items). */
  view(serviceSid: string, country: string): GuardView {
    return guardViewOf(this.countries, this.scopes, serviceSid, country);
  }
}

/** The view a send reads, from records kept by `countryKey` and by scope: copies of their states. */
export function guardViewOf(
  countries: ReadonlyMap<string, CountryRecord>,
  scopes: ReadonlyMap<string, ScopeRecord>,
  serviceSid: string,
  country: string,
): GuardView {
  const own = countries.get(countryKey(serviceSid, country))?.state;
  const all = scopes.get(serviceSid)?.state;
  const global = countries.get(countryKey(GLOBAL_SCOPE, country))?.state;
  return {
    service: { ...(own && { country: clone(own) }), ...(all && { all: clone(all) }) },
    global: { ...(global && { country: clone(global) }) },
  };
}
