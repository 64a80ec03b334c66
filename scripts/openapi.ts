/**
 * `npm run openapi`: writes the OpenAPI document of the public API (functions/http/openapi.ts) to
 * docs/openapi.json, formatted as Prettier would, so `prettier --check` and the test that compares the
 * committed file with a fresh one both pass. Commit the file with the change that altered it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prettier from 'prettier';
import { buildOpenApiDocument } from '../functions/http/openapi';

export const OPENAPI_FILE = join(__dirname, '..', 'docs', 'openapi.json');

/** The document as it is committed. */
export async function renderOpenApi(): Promise<string> {
  const options = (await prettier.resolveConfig(OPENAPI_FILE)) ?? {};
  return prettier.format(JSON.stringify(buildOpenApiDocument(), null, 2), {
    ...options,
    filepath: OPENAPI_FILE,
  });
}

export const committedOpenApi = (): string => readFileSync(OPENAPI_FILE, 'utf8');

if (require.main === module) {
  renderOpenApi().then(
    (text) => {
      writeFileSync(OPENAPI_FILE, text);
      process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
    },
    (error: unknown) => {
      process.stderr.write(`openapi: ${String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
