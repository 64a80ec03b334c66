/**
 * Money is held as integer units of 0.0001 USD (the API's four decimals), so sums and balance
 * conditions in DynamoDB are exact.
 */
export const UNITS_PER_USD = 10_000;

/** 790 -> "0.0790" */
export function formatUnits(units: number): string {
  const sign = units < 0 ? '-' : '';
  const abs = Math.abs(units);
  return `${sign}${Math.floor(abs / UNITS_PER_USD)}.${String(abs % UNITS_PER_USD).padStart(4, '0')}`;
}

/** The most whole dollars an amount may spell (999,999,999 USD), and its decimals (units of 0.0001 USD). */
export const USD_LIMITS = { wholeDigits: 9, decimals: 4 } as const;

const USD_AMOUNT = new RegExp(`^(\\d{1,${USD_LIMITS.wholeDigits}})(?:\\.(\\d{1,${USD_LIMITS.decimals}}))?$`);

/** "0.079" -> 790; undefined for anything that is not a non-negative amount with at most four decimals. */
export function parseUsd(text: string): number | undefined {
  const match = USD_AMOUNT.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * UNITS_PER_USD + Number((match[2] ?? '').padEnd(USD_LIMITS.decimals, '0'));
}
