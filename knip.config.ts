/**
 * knip (`npm run lint:dead`): files nothing reaches and exports nothing imports. Its Jest, ESLint, Prettier and
 * tsx plugins find the tests, the configs and the package.json scripts' files; the entries below are the rest.
 */
import type { KnipConfig } from 'knip';
import { FUNCTIONS, PROVIDER_FUNCTIONS } from './lib/functions';

// The Lambda entries come from the function manifest, wherever the files live.
const lambdaEntries = [...Object.values(FUNCTIONS), ...Object.values(PROVIDER_FUNCTIONS)].map(
  (spec) => spec.entry,
);

const config: KnipConfig = {
  entry: [
    ...lambdaEntries,
    'bin/app.ts',
    'scripts/*.ts',
    'console/ui/main.ts',
    // Run on their own with `npx tsx` (docs/bench.md).
    'bench/cold-starts.ts',
    'bench/guard/counts.ts',
    // Bundled by path by the bench (bench/bundles.ts), never imported.
    'bench/baseline-handler.ts',
  ],
  project: ['**/*.{ts,cjs,mjs,js}'],
  // DynamoDB Local is Java (local/dynamodb-local.ts), and the tests index its SQLite file with the sqlite3
  // command: system binaries, not packages.
  ignoreBinaries: ['java', 'sqlite3'],
};

export default config;
