/** Percentiles and plain-text tables. */

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export const median = (samples: readonly number[]) => percentile(samples, 50);

const mean = (samples: readonly number[]) =>
  samples.length === 0 ? Number.NaN : samples.reduce((total, value) => total + value, 0) / samples.length;

export interface Distribution {
  n: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
}

export function distribution(samples: readonly number[]): Distribution {
  return {
    n: samples.length,
    mean: round(mean(samples)),
    p50: round(percentile(samples, 50)),
    p95: round(percentile(samples, 95)),
    p99: round(percentile(samples, 99)),
  };
}

export const round = (value: number, digits = 3): number => {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
};

/** A text table with a header row; numbers right-aligned. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [
    header,
    ...rows.map((row) => row.map((cell) => (typeof cell === 'number' ? fmt(cell) : cell))),
  ];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => String(row[column] ?? '').length)));
  const line = (row: (string | number)[], isHeader: boolean) =>
    row
      .map((cell, column) => {
        const text = String(cell ?? '');
        const numeric = !isHeader && /^[-+]?[\d.,]+( ?[a-zA-Z%×]+)?$/.test(text);
        return numeric ? text.padStart(widths[column]!) : text.padEnd(widths[column]!);
      })
      .join('  ');
  return [
    line(cells[0]!, true),
    widths.map((width) => '-'.repeat(width)).join('  '),
    ...cells.slice(1).map((row) => line(row, false)),
  ].join('\n');
}

/** A Markdown table. */
export function markdownTable(header: string[], rows: (string | number)[][]): string {
  const text = (cell: string | number) =>
    (typeof cell === 'number' ? fmt(cell) : cell).replaceAll('|', '\\|');
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.map(text).join(' | ')} |`),
  ].join('\n');
}

export function fmt(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}
