// The domain core knows no AWS, no HTTP, no Lambda: it reaches them only through its ports. Kept apart from
// eslint.config.mjs so that test/unit/core-boundary.test.ts checks these very patterns.
module.exports = {
  files: ['functions/core/**/*.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: ['@aws-sdk/*', '@smithy/*', 'aws-lambda'],
            message: 'The core reaches AWS through a port.',
          },
          {
            group: ['@middy/*', '@aws-lambda-powertools/*'],
            message: 'Middleware belongs to the handlers.',
          },
          {
            group: ['**/adapters/**', '**/http/**', '**/entries/**', '**/receipts/**', '**/wiring/**'],
            message: 'The core imports no adapter or handler: define a port in functions/core/ports.ts.',
          },
          {
            // Bare `http` would also match the HTTP layer's folder; the code imports Node's modules as `node:`.
            group: ['node:http', 'node:https', 'node:http2', 'undici'],
            message: 'The core makes no HTTP call.',
          },
        ],
      },
    ],
  },
};
