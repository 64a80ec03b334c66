/** Human-readable output of the admin command: aligned label/value rows and simple tables. */
import { excludedHighRisk } from '../../functions/core/guard/high-risk-countries';
import { formatUnits } from '../../functions/core/money';
import type { DeliveryRules, Service, Template } from '../../functions/core/model';

export const usd = (units: number): string => `${formatUnits(units)} USD`;

/** Label/value rows with the values lined up. */
export function rows(entries: [label: string, value: string][]): string {
  const width = Math.max(...entries.map(([label]) => label.length));
  return entries.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}

/** A table with a header row; columns padded to their widest cell. */
export function table(header: string[], body: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...body.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...body.map(line)].join('\n');
}

export const list = (values: readonly string[]): string => (values.length > 0 ? values.join(', ') : 'none');

export const templateText = (template: Template | undefined): string =>
  template ? `${template.sid}  "${template.body}"` : 'none (sends without TemplateSid are refused)';

/** The allow-list as text: absent is every served country, empty is none. */
export const allowedText = (rules: DeliveryRules): string =>
  rules.allowedCountries === undefined
    ? 'every served country (no allow-list)'
    : rules.allowedCountries.length === 0
      ? 'none (every send is refused)'
      : rules.allowedCountries.join(', ');

/** The high-risk countries the allow-list leaves out, with why (docs/guard.md, "Static controls"). */
export const excludedText = (rules: DeliveryRules): string => {
  const excluded = excludedHighRisk(rules.allowedCountries);
  return excluded.length === 0
    ? 'none'
    : `${excluded.map((e) => e.country).join(', ')}: high risk for SMS pumping (docs/guard.md)`;
};

export const excludedJson = (rules: DeliveryRules) =>
  excludedHighRisk(rules.allowedCountries).map(({ country, name, reason, sources }) => ({
    country,
    name,
    reason,
    sources: sources.map((source) => source.url),
  }));

export function serviceText(service: Service): string {
  const prices = Object.entries(service.prices)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([country, units]) => `${country} ${formatUnits(units)}`);
  return rows([
    ['Service SID', service.sid],
    ['Name', service.name],
    ['Balance', usd(service.balance)],
    ['Channels', list(service.enabledChannels)],
    ['Default template', templateText(service.defaultTemplate)],
    ['Blocked countries', list(service.rules.blockedCountries)],
    ['Blocked prefixes', list(service.rules.blockedPrefixes)],
    ['Allowed countries', allowedText(service.rules)],
    ['High risk left out', excludedText(service.rules)],
    [
      'Own prices (USD)',
      prices.length > 0 ? `${prices.join(', ')}; list prices elsewhere` : 'none (list prices)',
    ],
    ['Webhook endpoints', service.webhookEndpoints.length > 0 ? `${list(service.webhookEndpoints)}` : 'none'],
    ['Created', service.createdAt],
  ]);
}

/** The service as `--json` shows it: amounts as USD strings with four decimals, like the API's `price`. */
export function serviceJson(service: Service) {
  return {
    serviceSid: service.sid,
    name: service.name,
    balance: formatUnits(service.balance),
    channels: service.enabledChannels,
    defaultTemplate: service.defaultTemplate ?? null,
    rules: service.rules,
    excludedHighRiskCountries: excludedJson(service.rules),
    prices: Object.fromEntries(
      Object.entries(service.prices).map(([country, units]) => [country, formatUnits(units)]),
    ),
    webhookEndpoints: service.webhookEndpoints,
    createdAt: service.createdAt,
  };
}
