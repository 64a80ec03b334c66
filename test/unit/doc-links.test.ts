/**
 * The documentation: every relative link of README.md and docs/*.md resolves (file, and heading for an anchor),
 * by the function `npx tsx scripts/check-links.ts` runs, and the README stays a short entrance to docs/.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, findBrokenLinks, markdownFiles } from '../../scripts/check-links';

const README_MAX_BYTES = 15_360;

describe('documentation links', () => {
  it('checks README.md and the docs pages', () => {
    const files = markdownFiles();
    expect(files).toContain('README.md');
    expect(files).toContain('docs/api.md');
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
