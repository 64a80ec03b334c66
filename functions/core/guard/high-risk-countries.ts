/**
 * Served countries a NEW service does not send to until its owner adds them: the countries public sources name as
 * most hit by SMS pumping (artificially inflated traffic). Only served countries (ROUTES) are listed, and only
 * with a source; each entry names its own. Existing services are not migrated: a service without an allow-list
 * sends to every served country, as it always did.
 */
import { ROUTES } from '../routing';

interface Source {
  publisher: string;
  title: string;
  url: string;
}

export interface HighRiskCountry {
  /** ISO 3166-1 alpha-2. */
  country: string;
  name: string;
  /** Why it is left out, as the console and the admin command show it. */
  reason: string;
  sources: readonly Source[];
}

const TWILIO_HIGH_RISK: Source = {
  publisher: 'Twilio',
  title: 'Error 30649: Failed to Update Geo Permissions (its list of high risk countries)',
  url: 'https://www.twilio.com/docs/api/errors/30649',
};

const BRAZE_GEO_PERMISSIONS: Source = {
  publisher: 'Braze',
  title: 'SMS Geographic Permissions: High-risk countries',
  url: 'https://www.braze.com/docs/user_guide/message_building_by_channel/sms/sms_geographic_permissions/',
};

const REASON = 'Named by a messaging provider as high risk for SMS pumping (artificially inflated traffic)';

export const HIGH_RISK_COUNTRIES: readonly HighRiskCountry[] = [
  { country: 'AZ', name: 'Azerbaijan', reason: REASON, sources: [TWILIO_HIGH_RISK, BRAZE_GEO_PERMISSIONS] },
  { country: 'BD', name: 'Bangladesh', reason: REASON, sources: [TWILIO_HIGH_RISK] },
  { country: 'NG', name: 'Nigeria', reason: REASON, sources: [TWILIO_HIGH_RISK] },
  { country: 'PK', name: 'Pakistan', reason: REASON, sources: [TWILIO_HIGH_RISK] },
];

const HIGH_RISK = new Set(HIGH_RISK_COUNTRIES.map((entry) => entry.country));

/** Every served country, sorted. */
export const servedCountries = (): string[] => Object.keys(ROUTES).sort();

/** What a new service may send to: every served country but the high-risk ones, sorted. */
export const defaultAllowedCountries = (): string[] =>
  servedCountries().filter((country) => !HIGH_RISK.has(country));

/** The high-risk countries an allow-list leaves out (all of them for the default list). */
export const excludedHighRisk = (allowed: readonly string[] | undefined): HighRiskCountry[] =>
  allowed === undefined ? [] : HIGH_RISK_COUNTRIES.filter((entry) => !allowed.includes(entry.country));
