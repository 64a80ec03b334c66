/** The writer of docs/bench-results.md: long cells become notes, and each bench rewrites only its own section. */
import { moveLongCells, targetsList, withSection } from '../../bench/markdown';

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
    const first = withSection(undefined, 'guard', 'guard tables v1');
    expect(first).toContain('# Benchmark results');
    expect(first).toContain('Not run yet: `npm run bench -- --markdown`.');
    const second = withSection(withSection(first, 'bench', 'bench tables'), 'guard', 'guard tables v2');
    expect(second).toContain('bench tables');
    expect(second).toContain('guard tables v2');
    expect(second).not.toContain('guard tables v1');
    expect(second.indexOf('## Service')).toBeLessThan(second.indexOf('## Pumping guard'));
  });
});

describe('targetsList', () => {
  it('says met or missed, what was measured, the limit and the note', () => {
    expect(
      targetsList([
        { target: 'fetch: 1 round trip', limit: '<= 1', measured: '2', met: false, note: 'the key write' },
      ]),
    ).toBe('- **missed**: fetch: 1 round trip. Measured 2, limit <= 1. the key write.');
  });
});
