/**
 * Routing depends on number types (a landline gets no WhatsApp, SNA only mobiles), so the libphonenumber metadata
 * must type the numbers of every served country (functions/core/routing.ts ROUTES). `/max` does: `/min` leaves
 * most mobiles untyped (DE, FR, ES, NL, IN, BR, MX, CU: no channel would reach them), and `/mobile` holds only
 * mobile patterns, so a landline stops being a valid number at all and North American fixed lines read as
 * mobiles. See docs/bench.md, "Bundles and cold start".
 */
import mobileExamples from 'libphonenumber-js/examples.mobile.json';
import { getCountryCallingCode, type CountryCode } from 'libphonenumber-js/max';
import { parsePhone } from '../../functions/core/phone';
import { CHANNELS, ROUTES, planRoute } from '../../functions/core/routing';

const everyChannel = { enabledChannels: CHANNELS, prices: { CU: 900 } };

/** Landlines of served countries, from the numbering plans (fictional subscribers). */
const LANDLINES: Record<string, string> = {
  GB: '+442079460000',
  DE: '+49301234567',
  FR: '+33123456789',
  IN: '+911123456789',
  AU: '+61212345678',
};

describe.each(Object.keys(ROUTES))('numbers of %s', (country) => {
  // The example mobile of the metadata, a national significant number, in E.164.
  const mobile = `+${getCountryCallingCode(country as CountryCode)}${(mobileExamples as Record<string, string>)[country]}`;

  test('a mobile is typed as one and routed', () => {
    const phone = parsePhone(mobile);
    expect(phone?.country).toBe(country);
    expect(['MOBILE', 'FIXED_LINE_OR_MOBILE']).toContain(phone?.type);
    expect(planRoute(phone!, everyChannel).ok).toBe(true);
  });

  const landline = LANDLINES[country];
  if (landline) {
    test('a landline is valid, typed FIXED_LINE, and reached by no channel', () => {
      const phone = parsePhone(landline);
      expect(phone).toMatchObject({ country, type: 'FIXED_LINE' });
      expect(planRoute(phone!, everyChannel)).toEqual({ ok: false, code: 'no_eligible_channel' });
    });
  }
});
