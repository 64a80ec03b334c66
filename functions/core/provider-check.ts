/**
 * The post-deploy check of a deployment's providers (`npm run admin -- providers check`): which checks to make,
 * in what order, within the time the deliver function has, and the report. The checks themselves are the
 * adapters' (a provider's `ProviderChecker`): they call the provider in ways that send nothing to anyone. Pure:
 * no AWS, no clock of its own.
 */
import { CHANNELS, ROUTES, type Channel } from './routing';

/** The event that asks the deliver function for the check instead of a delivery step. */
export const PROVIDER_CHECK_KIND = 'otp.providers.check';

export interface ProviderCheckRequest {
  /** Per ISO country, the number the dry runs go to instead of the default. */
  to: Readonly<Record<string, string>>;
  /** Only these countries' per-country checks, and no channel-wide check (a continuation: `remaining`). */
  countries?: readonly string[];
}

/** What one check found. `detail`: the provider's own error on a failure, what was checked on a pass. */
export interface CheckOutcome {
  check: string;
  ok: boolean;
  detail: string;
}

export interface CheckRow extends CheckOutcome {
  channel: Channel;
  provider: string;
  /** The country checked, or `*` for a check that holds for every country the provider carries the channel to. */
  country: string;
  /** The countries the row holds for: the one checked, or those the provider carries the channel to. */
  countries: string[];
}

/** A provider's checks. `country`: one per destination country (a dry run); `channel`: one per channel. */
export interface ProviderChecker {
  scope: 'country' | 'channel';
  check(target: { channel: Channel; country?: string; to?: string }): Promise<CheckOutcome[]>;
  /** What cannot be known without sending a message, said in the report. */
  cannotCheck: readonly string[];
}

export interface ProviderCheckReport {
  kind: typeof PROVIDER_CHECK_KIND;
  rows: CheckRow[];
  /** Per provider checked, what no check short of a real send can tell. */
  cannotCheck: Record<string, readonly string[]>;
  /** Channels on a provider with no checker (the simulated carrier), with their provider. */
  notChecked: { channel: Channel; provider: string }[];
  /** Countries whose per-country checks did not run in this invocation (time ran out): ask again for them. */
  remaining: string[];
}

export interface ProviderCheckInput {
  request: ProviderCheckRequest;
  /** The channels the deployment allows (`OTP_ALLOWED_CHANNELS`) and carries. */
  channels: readonly Channel[];
  /** The provider of a channel for a country (the deployment's `OTP_PROVIDERS`). */
  providerFor(channel: Channel, country: string): string | undefined;
  checkers: Readonly<Record<string, ProviderChecker | undefined>>;
  /** A default destination for a country's dry run, when the request names none for it. */
  defaultNumber?(country: string): string | undefined;
  /** How long this invocation may still run, ms. */
  timeLeftMs(): number;
  /** Checks stop being started with less than this left (a check may take the provider's request time-out). */
  reserveMs: number;
}

/** The countries a channel serves (the routing table), in its order. */
export const countriesOf = (channel: Channel): string[] =>
  Object.keys(ROUTES).filter((country) => ROUTES[country]!.cost[channel] !== undefined);

/**
 * Runs the checks one after another (the providers limit dry runs per second): channel-wide ones first, then
 * per country, channel by channel. A check that throws is a failed row with its error, never a failed run.
 */
export async function runProviderCheck(input: ProviderCheckInput): Promise<ProviderCheckReport> {
  const { request } = input;
  const rows: CheckRow[] = [];
  const cannotCheck: Record<string, readonly string[]> = {};
  const notChecked: ProviderCheckReport['notChecked'] = [];
  const perCountry: { channel: Channel; country: string; provider: string; checker: ProviderChecker }[] = [];
  const only = request.countries && new Set(request.countries);

  const run = async (
    base: Omit<CheckRow, keyof CheckOutcome>,
    checker: ProviderChecker,
    target: Parameters<ProviderChecker['check']>[0],
  ) => {
    let outcomes: CheckOutcome[];
    try {
      outcomes = await checker.check(target);
    } catch (error) {
      outcomes = [{ check: 'check', ok: false, detail: errorText(error) }];
    }
    for (const outcome of outcomes) rows.push({ ...base, ...outcome });
  };

  for (const channel of CHANNELS) {
    if (!input.channels.includes(channel)) continue;
    const byProvider = new Map<string, string[]>();
    for (const country of countriesOf(channel)) {
      const provider = input.providerFor(channel, country);
      if (provider) byProvider.set(provider, [...(byProvider.get(provider) ?? []), country]);
    }
    for (const [provider, countries] of byProvider) {
      const checker = input.checkers[provider];
      if (!checker) {
        if (!only) notChecked.push({ channel, provider });
        continue;
      }
      cannotCheck[provider] = checker.cannotCheck;
      if (checker.scope === 'channel') {
        if (!only) await run({ channel, provider, country: '*', countries }, checker, { channel });
      } else
        for (const country of countries)
          if (!only || only.has(country)) perCountry.push({ channel, country, provider, checker });
    }
  }

  const remaining = new Set<string>();
  for (const { channel, country, provider, checker } of perCountry) {
    if (remaining.size > 0 || input.timeLeftMs() < input.reserveMs) {
      remaining.add(country);
      continue;
    }
    const to = request.to[country] ?? input.defaultNumber?.(country);
    if (!to) {
      rows.push({
        channel,
        provider,
        country,
        countries: [country],
        check: 'destination',
        ok: false,
        detail: `no number of ${country} to dry-run to: pass --to with one`,
      });
      continue;
    }
    await run({ channel, provider, country, countries: [country] }, checker, { channel, country, to });
  }
  // A country left over is checked again in full next time: its rows here would be repeated.
  const report = rows.filter((row) => row.country === '*' || !remaining.has(row.country));
  return { kind: PROVIDER_CHECK_KIND, rows: report, cannotCheck, notChecked, remaining: [...remaining] };
}

/** A provider's error as the operator should read it: its name, its message, AWS's reason when it gives one. */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { Reason, Fields } = error as { Reason?: unknown; Fields?: unknown };
  const fields = Array.isArray(Fields)
    ? Fields.map(
        (field: { Name?: unknown; Message?: unknown }) => `${String(field.Name)}: ${String(field.Message)}`,
      )
    : [];
  return [
    `${error.name}: ${error.message}`,
    typeof Reason === 'string' ? ` (${Reason})` : '',
    fields.length > 0 ? ` [${fields.join('; ')}]` : '',
  ].join('');
}
