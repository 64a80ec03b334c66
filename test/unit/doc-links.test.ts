/**
 * The documentation: every relative link of README.md, CONTRIBUTING.md, docs/*.md and docs/adr/*.md resolves
 * (file, and heading for an anchor), by the function `npx tsx scripts/check-links.ts` runs; the README,
 * CONTRIBUTING.md and the bench pages stay short; history (issue numbers) stays in the decision records.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, findBrokenLinks, markdownFiles } from '../../scripts/check-links';

const README_MAX_BYTES = 15_360;
/**
 * docs/bench.md says how to run the benches and what each figure means; the results are generated: the service's
 * on one page, the guard's matrix on another (at standard, at strict, without receipts).
 */
const PAGE_MAX_BYTES: Record<string, number> = {
  'CONTRIBUTING.md': 4_096,
  'docs/bench.md': 20_480,
  'docs/bench-results.md': 30_720,
  'docs/guard-results.md': 16_384,
};

describe('documentation links', () => {
  it('checks README.md and the docs pages', () => {
    const files = markdownFiles();
    expect(files).toContain('README.md');
    expect(files).toContain('CONTRIBUTING.md');
    expect(files).toContain('docs/api.md');
    expect(files).toContain('docs/adr/README.md');
  });

  it('has no broken relative link', () => {
    expect(findBrokenLinks()).toEqual([]);
  });
});

describe('README.md', () => {
  it(`is at most ${README_MAX_BYTES} bytes`, () => {
    expect(statSync(join(REPO_ROOT, 'README.md')).size).toBeLessThanOrEqual(README_MAX_BYTES);
  });
});

describe.each(Object.entries(PAGE_MAX_BYTES))('%s', (page, max) => {
  it(`is at most ${max} bytes`, () => {
    expect(statSync(join(REPO_ROOT, page)).size).toBeLessThanOrEqual(max);
  });
});

describe('history', () => {
  it('names issue numbers only in the decision records', () => {
    const naming = markdownFiles()
      .filter((file) => !file.startsWith('docs/adr/'))
      .flatMap((file) =>
        readFileSync(join(REPO_ROOT, file), 'utf8')
          .split('\n')
          .flatMap((line, index) => (/\bissues? #?\d+/i.test(line) ? [`${file}:${index + 1}: ${line}`] : [])),
      );
    expect(naming).toEqual([]);
  });
});
