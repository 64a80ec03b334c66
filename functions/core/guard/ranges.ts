/**
 * Known high-risk number ranges, shipped as data: ranges whose termination fees are high and shared with the
 * terminating network (premium rate, satellite, shared international networks, personal numbering) and that a
 * verification code has no business going to. Each entry names its source. The guard blocks a send to them at
 * `standard` and `strict` unless the number or a prefix of it is on the service's safe list.
 *
 * Non-geographic ranges (+870, +881, +882, +883, +979) are refused earlier as `unroutable` today (no country);
 * they are listed so that the guard still stops them if routing ever serves them.
 */
export interface HighRiskRange {
  /** E.164 prefix. */
  prefix: string;
  kind: 'premium' | 'satellite' | 'international_network' | 'personal_numbering';
  /** Where the range's allocation is documented. */
  source: string;
}

const HIGH_RISK_RANGES: readonly HighRiskRange[] = [
  { prefix: '+870', kind: 'satellite', source: 'ITU-T E.164 assignment list: Inmarsat SNAC' },
  { prefix: '+8816', kind: 'satellite', source: 'ITU-T E.164 assignment list: +881 GMSS, Iridium' },
  { prefix: '+8817', kind: 'satellite', source: 'ITU-T E.164 assignment list: +881 GMSS, Iridium' },
  { prefix: '+8818', kind: 'satellite', source: 'ITU-T E.164 assignment list: +881 GMSS, Globalstar' },
  { prefix: '+8819', kind: 'satellite', source: 'ITU-T E.164 assignment list: +881 GMSS, Globalstar' },
  { prefix: '+882', kind: 'international_network', source: 'ITU-T E.164 assignment list: +882 networks' },
  { prefix: '+883', kind: 'international_network', source: 'ITU-T E.164 assignment list: +883 networks' },
  { prefix: '+979', kind: 'premium', source: 'ITU-T E.164 assignment list: international premium rate' },
  { prefix: '+4470', kind: 'personal_numbering', source: 'Ofcom National Telephone Numbering Plan: 070' },
  { prefix: '+4490', kind: 'premium', source: 'Ofcom National Telephone Numbering Plan: 090 premium rate' },
  { prefix: '+4491', kind: 'premium', source: 'Ofcom National Telephone Numbering Plan: 091 premium rate' },
  { prefix: '+4498', kind: 'premium', source: 'Ofcom National Telephone Numbering Plan: 098 premium rate' },
  { prefix: '+3389', kind: 'premium', source: 'ARCEP plan de numérotation: 089 special-rate services' },
  { prefix: '+1900', kind: 'premium', source: 'NANPA: 900 premium services' },
];

export const highRiskRangeOf = (e164: string): HighRiskRange | undefined =>
  HIGH_RISK_RANGES.find((range) => e164.startsWith(range.prefix));
