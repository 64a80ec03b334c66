/**
 * The core's boundary is a lint rule, not a habit: the patterns eslint.config.mjs applies to functions/core
 * refuse an import of AWS, middleware, an adapter, a handler or HTTP, and let the core's own modules and plain
 * libraries through.
 */
import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const coreBoundary = require('../../eslint.core-boundary.cjs') as Linter.Config & { files: string[] };

const IMPORTS = [
  "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
  "import middy from '@middy/core';",
  "import { Logger } from '@aws-lambda-powertools/logger';",
  "import { DynamoStore } from '../adapters/dynamodb/store';",
  "import { jsonError } from '../http/errors';",
  "import { request } from 'node:https';",
  "import { ROUTES } from './routing';",
  "import { z } from 'zod';",
];
const SOURCE = `${IMPORTS.join('\n')}\nexport const used = [DynamoDBClient, middy, Logger, DynamoStore, jsonError, request, ROUTES, z];\n`;

const restricted = (filename: string) =>
  new Linter({ configType: 'flat' }).verify(
    SOURCE,
    [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, coreBoundary],
    { filename },
  );

describe('functions/core imports', () => {
  it('refuses AWS, middleware, adapters, handlers and HTTP; lets its own modules and libraries through', () => {
    const messages = restricted('functions/core/send.ts');
    expect(messages.map((m) => m.line)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(messages[0]!.message).toContain('through a port');
    expect(messages[3]!.message).toContain('functions/core/ports.ts');
  });

  it('applies to the core only: an adapter may import AWS and the core', () => {
    expect(restricted('functions/adapters/dynamodb/store.ts')).toEqual([]);
  });
});
