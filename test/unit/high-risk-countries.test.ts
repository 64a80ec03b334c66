/** The high-risk countries a new service leaves out: served, sourced, and what the default list omits. */
import {
  HIGH_RISK_COUNTRIES,
  defaultAllowedCountries,
  excludedHighRisk,
  servedCountries,
} from '../../functions/core/guard/high-risk-countries';
import { ROUTES } from '../../functions/core/routing';

test('every entry is a served country with a reason and at least one public source', () => {
  for (const entry of HIGH_RISK_COUNTRIES) {
    expect(ROUTES[entry.country]).toBeDefined();
    expect(entry.reason).not.toBe('');
    expect(entry.sources.length).toBeGreaterThan(0);
    for (const source of entry.sources) {
      expect(source.publisher).not.toBe('');
      expect(source.title).not.toBe('');
      expect(source.url).toMatch(/^https:\/\//);
    }
  }
  expect(new Set(HIGH_RISK_COUNTRIES.map((e) => e.country)).size).toBe(HIGH_RISK_COUNTRIES.length);
});

test('the default allow-list is every served country but the high-risk ones', () => {
  const risky = HIGH_RISK_COUNTRIES.map((e) => e.country);
  expect(defaultAllowedCountries()).toEqual(servedCountries().filter((c) => !risky.includes(c)));
  expect(excludedHighRisk(defaultAllowedCountries()).map((e) => e.country)).toEqual(risky);
  expect(excludedHighRisk(undefined)).toEqual([]);
  expect(excludedHighRisk(servedCountries())).toEqual([]);
});
