/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(ts|js|mjs)$': '<rootDir>/test/support/esbuild-transform.cjs' },
  // middy and zod ship ESM only; let the transform turn them into CommonJS for Jest.
  transformIgnorePatterns: ['/node_modules/(?!(@middy|zod)/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  maxWorkers: 2,
  testTimeout: 30000,
};
