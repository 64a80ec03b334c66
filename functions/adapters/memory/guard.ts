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
  type KnownCheck,
  type SavedRecords,
  type ScopeRecord,
} from '../../core/guard/consumer';
import type { GuardView, KnownNumber } from '../../core/guard/model';
import type { ServiceGuardSettings } from '../../core/model';

const clone = <T>(value: T): T => structuredClone(value);

export class MemoryGuardStore implements GuardSignalStore {
  private readonly countries = new Map<string, CountryRecord>();
  private readonly scopes = new Map<string, ScopeRecord>();
  private readonly known = new Map<string, KnownNumber>();

  /** `settingsOf`: a service's guard settings (the memory store's service records). */
  constructor(
    private readonly settingsOf: (serviceSid: string) => ServiceGuardSettings | undefined = () => undefined,
  ) {}

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

  async rememberKnown(checks: KnownCheck[]): Promise<void> {
    for (const { serviceSid, e164, at } of checks)
      this.known.set(knownKey(serviceSid, e164), { at, passes: 0 });
  }

  /** The number's `KnownNumber` for the service, as the send reads it (the verdict judges its age). */
  knownNumber(serviceSid: string, e164: string): KnownNumber | undefined {
    const known = this.known.get(knownKey(serviceSid, e164));
    return known && { ...known };
  }

  /** Every known number, to copy into another store (the bench's warm-up, kept for each scenario). */
  knownEntries(): [string, KnownNumber][] {
    return [...this.known].map(([key, known]) => [key, { ...known }]);
  }

  restoreKnown(entries: [string, KnownNumber][]): void {
    for (const [key, known] of entries) this.known.set(key, { ...known });
  }

  /** A send passed a block as a known number (the DynamoDB store's `ADD passes 1`). */
  countKnownPass(serviceSid: string, e164: string): void {
    const known = this.known.get(knownKey(serviceSid, e164));
    if (known) known.passes += 1;
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

  /** What a send of `serviceSid` to `e164` in `country` reads (the DynamoDB store's four guard items). */
  view(serviceSid: string, country: string, e164?: string): GuardView {
    const known = e164 === undefined ? undefined : this.knownNumber(serviceSid, e164);
    return { ...guardViewOf(this.countries, this.scopes, serviceSid, country), ...(known && { known }) };
  }
}

const knownKey = (serviceSid: string, e164: string): string => `${serviceSid} ${e164}`;

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
