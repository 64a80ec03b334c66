/**
 * One home for the Lambda entries: each function of the manifest (lib/functions.ts) has its composition root at
 * functions/entries/<its key>.ts, and that folder holds nothing else. Each entry exports the `handler` the stack
 * names and goes through the shared cold-start helpers (functions/wiring/entries.ts), so no entry caches its
 * setup by hand.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FUNCTIONS, PROVIDER_FUNCTIONS, type FunctionSpec } from '../../lib/functions';

const ROOT = join(__dirname, '..', '..');
const ENTRIES_DIR = 'functions/entries';

const manifest: [string, FunctionSpec][] = [
  ...Object.entries(FUNCTIONS),
  ...Object.entries(PROVIDER_FUNCTIONS),
];

describe('the Lambda entries', () => {
  it.each(manifest)('%s lives at functions/entries/<its key>.ts', (name, spec) => {
    expect(spec.entry).toBe(`${ENTRIES_DIR}/${name}.ts`);
    expect(existsSync(join(ROOT, spec.entry))).toBe(true);
  });

  it('functions/entries holds exactly the manifest entries', () => {
    const files = readdirSync(join(ROOT, ENTRIES_DIR)).map((file) => `${ENTRIES_DIR}/${file}`);
    expect(files.sort()).toEqual(manifest.map(([, spec]) => spec.entry).sort());
  });

  it.each(manifest)('%s exports handler and builds through coldStart and observed', (_name, spec) => {
    const source = readFileSync(join(ROOT, spec.entry), 'utf8');
    expect(source).toMatch(/^export const handler\b/m);
    // Directly, or through apiEntry or taskEntry, which use both.
    expect(source).toMatch(/\b(coldStart|apiEntry|taskEntry)\(/);
    expect(source).toMatch(/\b(observed|apiEntry|taskEntry)\(/);
    expect(source).toMatch(/from '\.\.\/wiring\/entries'/);
  });
});
