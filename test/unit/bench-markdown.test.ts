/**
 * The writer of docs/bench-results.md and docs/guard-results.md: long cells become notes, and each bench rewrites only
 * its own section.
 */
import { ASSUMPTIONS, PRICES } from '../../bench/cost';
import { benchSection, moveLongCells, targetsList, withSection } from '../../bench/markdown';
import type { BenchResults } from '../../bench/report';

describe('moveLongCells', () => {
  it('moves a long cell under its table and keeps the row label', () => {
    const label = 'a row label longer than the limit, kept where it is';
    const note = 'x'.repeat(50);
    const text = ['| what | basis |', '|---|---|', `| ${label} | ${note} |`, '| short | ok |', 'after'].join(
      '\n',
    );
    expect(moveLongCells(text, 40).split('\n')).toEqual([
      '| what | basis |',
      '|---|---|',
      `| ${label} | note 1 |`,
      '| short | ok |',
      '',
      `1. ${note}`,
      '',
      'after',
    ]);
  });

  it('takes a one-cell row printed under a wider table out as a paragraph', () => {
    const text = ['| a | b |', '|---|---|', '| 1 | 2 |', '| A note right under the table |'].join('\n');
    expect(moveLongCells(text).split('\n')).toEqual([
      '| a | b |',
      '|---|---|',
      '| 1 | 2 |',
      '',
      'A note right under the table',
      '',
    ]);
  });
});

describe('withSection', () => {
  it('makes the page, then replaces one section and keeps the other', () => {
    const first = withSection(undefined, 'fees', 'fee tables v1');
    expect(first).toContain('# Benchmark results');
    expect(first).toContain('Not run yet: `npm run bench -- --markdown`.');
    const second = withSection(withSection(first, 'bench', 'bench tables'), 'fees', 'fee tables v2');
    expect(second).toContain('bench tables');
    expect(second).toContain('fee tables v2');
    expect(second).not.toContain('fee tables v1');
    expect(second.indexOf('## Service')).toBeLessThan(second.indexOf('## Provider fees'));
  });

  it("keeps the guard's sections on their own page, apart from the service's", () => {
    const guard = withSection(undefined, 'guardStrict', 'strict table');
    expect(guard).toContain('# Pumping guard results');
    expect(guard).not.toContain('## Service');
    expect(guard.indexOf('## Pumping guard\n')).toBeLessThan(guard.indexOf('strict table'));
    expect(guard).toContain('Not run yet: `npm run bench:guard -- --receipts none --markdown`.');
    expect(withSection(undefined, 'bench', 'bench tables')).not.toContain('## Pumping guard');
  });

  it('adds the provider fees right after the service on a page written before they had a section', () => {
    const older = [
      '# Benchmark results',
      '## Service\n\n<!-- bench results: start -->\n\nbench tables\n\n<!-- bench results: end -->',
      '## Pumping guard\n\n<!-- guard results: start -->\n\nguard tables\n\n<!-- guard results: end -->',
    ].join('\n\n');
    const page = withSection(older, 'fees', 'fee table v1');
    expect(page.indexOf('bench tables')).toBeLessThan(page.indexOf('## Provider fees'));
    expect(page.indexOf('fee table v1')).toBeLessThan(page.indexOf('## Pumping guard'));
    expect(page).toContain('guard tables');
    const again = withSection(page, 'fees', 'fee table v2');
    expect(again).toContain('fee table v2');
    expect(again).not.toContain('fee table v1');
    expect(again.match(/## Provider fees/g)).toHaveLength(1);
  });
});

describe('targetsList', () => {
  it('says met or missed, what was measured and the note (the name states the limit)', () => {
    expect(
      targetsList([
        { target: 'fetch: 1 round trip', limit: '<= 1', measured: '2', met: false, note: 'the key write' },
      ]),
    ).toBe('- **missed**: fetch: 1 round trip. Measured 2. the key write.');
  });

  it("states a family of targets once, in the place of its first member: each one's figure, shared notes", () => {
    const title = 'each bundle under 400 KB';
    const bundle = (item: string, kb: number, note?: string) => ({
      target: `bundle ${item} under 400 KB`,
      limit: '< 400 KB',
      measured: `${kb} KB`,
      met: kb < 400 || note !== undefined,
      note: '',
      group: { title, item, value: `${kb} KB`, ...(note && { note }) },
    });
    const other = { target: 'fetch: 1 round trip', limit: '<= 1', measured: '1', met: true, note: '' };
    expect(
      targetsList([
        bundle('send.ts', 527, 'over; the bundled SDK starts faster'),
        other,
        bundle('check.ts', 298),
        bundle('console.ts', 518, 'over; the bundled SDK starts faster'),
      ]).split('\n'),
    ).toEqual([
      '- met: each bundle under 400 KB. Measured send.ts 527 KB, check.ts 298 KB, console.ts 518 KB.' +
        ' send.ts, console.ts: over; the bundled SDK starts faster.',
      '- met: fetch: 1 round trip. Measured 1.',
    ]);
  });

  it('says a family is missed when one member is, and names it with its whole measure', () => {
    const cold = (item: string, ratio: number) => ({
      target: `cold start of ${item} <= 1.1 x the baseline's`,
      limit: '<= 1.1',
      measured: `${ratio} (x ms / y ms)`,
      met: ratio <= 1.1,
      note: '',
      group: { title: 'cold start of each entry <= 1.1 x', item, value: String(ratio) },
    });
    expect(targetsList([cold('check.ts', 0.99), cold('deliver.ts', 1.2)])).toBe(
      '- **missed**: cold start of each entry <= 1.1 x. Measured check.ts 0.99, deliver.ts 1.2.' +
        " Missed: cold start of deliver.ts <= 1.1 x the baseline's, measured 1.2 (x ms / y ms).",
    );
  });
});

describe('benchSection', () => {
  it('renders a run as the run line, its tables and the targets as a list', () => {
    const money = { measured: 1, projected: 2 };
    const results = {
      machine: {
        date: '2026-11-26T00:00:00.000Z',
        nproc: 2,
        cpu: 'cpu',
        node: 'v20',
        platform: 'linux x64',
        memoryGb: 8,
        loadAverageAtStart: [1, 1, 1],
        loadAverageAtEnd: [1, 1, 1],
        commit: 'abc1234',
      },
      runSeconds: 1,
      partSeconds: { counts: 1 },
      counts: { operations: [], paths: [] },
      latency: { iterations: 10, warmup: 1, operations: [], raw: [], tasks: [] },
      cost: {
        prices: PRICES,
        assumptions: ASSUMPTIONS,
        perVerification: { apiGatewayRequests: 5 },
        lines: [{ service: 'DynamoDB on-demand', measured: 1, projected: 2, basis: 'b'.repeat(80) }],
        totalFourServices: money,
        totalWithOther: money,
        receiptDelays: [],
        monthlyVerifications: 1_000_000,
        guardByVolume: [
          {
            monthlyVerifications: 1_000_000,
            sendsPerSecond: 1_000_000 / 2_592_000,
            services: 1,
            wru: 2.5,
            rru: 2,
            wruPerBatch: 29,
            rruPerBatch: 23,
            largestItemBytes: 3700,
            usd: 1.8,
            totalFourServices: 2,
          },
          // Results of before the deployment's services were counted: no figure.
          {
            monthlyVerifications: 10_000_000,
            sendsPerSecond: 10_000_000 / 2_592_000,
            wru: 0.37,
            rru: 0.22,
            wruPerBatch: 43,
            rruPerBatch: 26,
            largestItemBytes: 4900,
            usd: 0.26,
            totalFourServices: 0.46,
          },
        ],
      },
      targets: [{ target: 'fetch: 1 round trip', limit: '<= 1', measured: '2', met: false, note: '' }],
    } as unknown as BenchResults;
    const section = benchSection(results);
    expect(section).toContain('commit abc1234');
    expect(section).toContain('### AWS bill per 1,000,000 verifications at 1,000,000 a month (send,');
    // The guard consumer by monthly volume: per batch and per send, and the bill at each volume.
    expect(section).toContain("### The guard's stream consumer by monthly volume");
    expect(section).toContain('| 1,000,000 | 1 | 0.39 | 29 | 23 | 2.50 | 2 | 3.60 | 1.80 | 2.00 |');
    expect(section).toContain('| 10,000,000 | - | 3.86 | 43 | 26 | 0.37 | 0.22 | 4.80 | 0.26 | 0.46 |');
    expect(section).toContain('The bill above prices it at 1,000,000 a month');
    expect(section).toContain('| DynamoDB on-demand | 1.00 | 2.00 | note 1 |');
    expect(section).toContain(`1. ${'b'.repeat(80)}`);
    // The optional edge, outside the totals: the four API requests (the receipt callback stays off the edge).
    expect(section).toContain('| optional edge (otp:edge), add to a total | 6.72 | 6.72 | note 2 |');
    expect(section).toContain('2. 4 requests through CloudFront and AWS WAF, 4 KB out; plus $11 a month');
    expect(section.trimEnd().endsWith('- **missed**: fetch: 1 round trip. Measured 2.')).toBe(true);
    expect(section.match(/### Targets/g)).toHaveLength(1);
  });
});
