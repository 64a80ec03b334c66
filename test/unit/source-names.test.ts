/**
 * No two source files share their folder and file name (`webhooks/sender.ts` in two places), nor the same two
 * names swapped (`api/console.ts` beside `console/api.ts`): a path quoted in a comment, a log or a review names
 * one file, and an editor's tab or a stack frame shows which.
 */
import { readdirSync } from 'node:fs';
import { extname, join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const SOURCE_DIRS = ['bin', 'bench', 'console', 'functions', 'lib', 'local', 'scripts'];
const SOURCE_EXTENSIONS = new Set(['.ts', '.tsx', '.js', '.cjs', '.mjs']);

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((item) => {
    const path = `${dir}/${item.name}`;
    if (item.isDirectory()) return item.name === 'node_modules' ? [] : sourceFiles(path);
    return SOURCE_EXTENSIONS.has(extname(item.name)) ? [path] : [];
  });
}

/** Groups of files that share `<folder>/<file>`, or whose folder and file name (without extension) swap. */
function nameClashes(files: string[]): string[][] {
  const groups = new Map<string, string[]>();
  const add = (key: string, file: string) => groups.set(key, [...(groups.get(key) ?? []), file]);
  for (const file of files) {
    const parts = file.split('/');
    const name = parts.at(-1)!;
    const folder = parts.at(-2) ?? '';
    add(`same ${folder}/${name}`, file);
    const stem = name.slice(0, name.length - extname(name).length);
    if (stem !== folder) add(`swapped ${[folder, stem].sort().join('|')}`, file);
  }
  const clashes = [...groups.values()].filter((group) => group.length > 1);
  // Two files of one folder and one name are also each other's swap: one group.
  return [...new Map(clashes.map((group) => [group.join(' '), group])).values()];
}

describe('source file names', () => {
  it('finds a shared folder and file name, and a swapped pair', () => {
    expect(
      nameClashes([
        'functions/queue/sender.ts',
        'functions/core/queue/sender.ts',
        'functions/routes/http.ts',
        'functions/http/routes.ts',
        'functions/http/errors.ts',
      ]),
    ).toEqual([
      ['functions/queue/sender.ts', 'functions/core/queue/sender.ts'],
      ['functions/routes/http.ts', 'functions/http/routes.ts'],
    ]);
  });

  it(`no two files under ${SOURCE_DIRS.join(', ')} share their folder and file name`, () => {
    const files = SOURCE_DIRS.flatMap(sourceFiles);
    expect(files).toContain('functions/entries/send.ts');
    expect(nameClashes(files)).toEqual([]);
  });
});
