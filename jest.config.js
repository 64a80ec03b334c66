/** What every project shares. */
const common = {
  testEnvironment: 'node',
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(ts|js|mjs)$': '<rootDir>/test/support/esbuild-transform.cjs' },
  // middy, zod and puppeteer-core (the browser tests) ship ESM only; the transform turns them into CommonJS.
  transformIgnorePatterns: ['/node_modules/(?!(@middy|zod|puppeteer-core|@puppeteer|chromium-bidi)/)'],
};

/**
 * `core` (test/core/) runs the domain rules over the in-memory store, `unit` (test/unit/) the adapters and
 * parsers on their own: neither needs DynamoDB or Java (`npm run test:fast`). `slow` (test/slow/) needs no Java
 * either but takes minutes (bundles, simulations, real time-outs). `dynamodb`
 * is everything else; its global setup starts one DynamoDB Local. Jest runs a project's global setup only when
 * tests of that project are selected, so `npm run test:fast` never starts Java, and `jest` runs all three.
 */
/**
 * AWS's service models are public material this repository does not commit (test/fixtures/aws-models/README.md):
 * the `models` project (test/models/) runs where local/smithy.ts finds them, and says so where it does not.
 */
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const modelDirs = [
  process.env.OTP_AWS_MODELS_DIR,
  join(__dirname, '..', 'shared', 'aws-models'),
  join(__dirname, 'test', 'fixtures', 'aws-models'),
].filter(Boolean);
const hasModels = ['pinpoint-sms-voice-v2', 'socialmessaging'].every((name) =>
  modelDirs.some((dir) => existsSync(join(dir, `${name}.json`))),
);
if (!hasModels && !process.env.JEST_WORKER_ID)
  console.warn(
    'AWS service models not found: test/models/ does not run (test/fixtures/aws-models/README.md).',
  );

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...common, displayName: 'core', roots: ['<rootDir>/test/core'] },
    { ...common, displayName: 'unit', roots: ['<rootDir>/test/unit'] },
    // Java-free too, but slow: bundling every entry, the guard's simulations, real client time-outs.
    { ...common, displayName: 'slow', roots: ['<rootDir>/test/slow'] },
    ...(hasModels ? [{ ...common, displayName: 'models', roots: ['<rootDir>/test/models'] }] : []),
    {
      ...common,
      displayName: 'dynamodb',
      roots: ['<rootDir>/test'],
      testPathIgnorePatterns: [
        '/node_modules/',
        '<rootDir>/test/core/',
        '<rootDir>/test/unit/',
        '<rootDir>/test/slow/',
        '<rootDir>/test/models/',
      ],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      // Records the answers with OTP_RECORD_ANSWERS=<directory> (docs/testing.md); nothing otherwise.
      setupFilesAfterEnv: ['<rootDir>/test/support/record-answers.ts'],
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
  maxWorkers: 2,
  testTimeout: 30000,
};
