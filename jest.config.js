/** What every project shares. */
const common = {
  testEnvironment: 'node',
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(ts|js|mjs)$': '<rootDir>/test/support/esbuild-transform.cjs' },
  // middy, zod and puppeteer-core (the browser tests) ship ESM only; the transform turns them into CommonJS.
  transformIgnorePatterns: ['/node_modules/(?!(@middy|zod|puppeteer-core|@puppeteer|chromium-bidi)/)'],
};

/**
 * Three projects. `core` (test/core/) runs the domain rules over the in-memory store, `unit` (test/unit/) the
 * adapters, parsers and bundles on their own: neither needs DynamoDB or Java (`npm run test:fast`). `dynamodb`
 * is everything else; its global setup starts one DynamoDB Local. Jest runs a project's global setup only when
 * tests of that project are selected, so `npm run test:fast` never starts Java, and `jest` runs all three.
 */
/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...common, displayName: 'core', roots: ['<rootDir>/test/core'] },
    { ...common, displayName: 'unit', roots: ['<rootDir>/test/unit'] },
    {
      ...common,
      displayName: 'dynamodb',
      roots: ['<rootDir>/test'],
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/core/', '<rootDir>/test/unit/'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
  maxWorkers: 2,
  testTimeout: 30000,
};
