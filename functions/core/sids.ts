/** SIDs: two letters and 32 lowercase hex characters (128 random bits). `WH` names a webhook endpoint. */
export type SidPrefix = 'VA' | 'VE' | 'HX' | 'WH';

export const SID_PATTERNS: Readonly<Record<SidPrefix, RegExp>> = {
  VA: /^VA[0-9a-f]{32}$/,
  VE: /^VE[0-9a-f]{32}$/,
  HX: /^HX[0-9a-f]{32}$/,
  WH: /^WH[0-9a-f]{32}$/,
};

export const isSid = (prefix: SidPrefix, value: string): boolean => SID_PATTERNS[prefix].test(value);
