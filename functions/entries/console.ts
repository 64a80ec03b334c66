/**
 * The console function's composition root: the console's JSON API behind API Gateway's JWT authorizer and its
 * static files, which the stack's bundling puts beside this file (`console/`, built from console/ui by
 * lib/constructs/console.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deferredKeyRing } from '../adapters/keyring';
import { lambdaLogger } from '../adapters/logger';
import { buildConsoleHandler, type ConsoleAssets } from '../console/routes';
import { buildConsoleDeps } from '../wiring/console';
import { tableFromEnv } from '../wiring/dynamo';
import { apiEntry, coldStart } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';

const ASSET_FILES = ['index.html', 'app.js', 'app.css'];

const assets = coldStart(async (): Promise<ConsoleAssets> => ({
  files: Object.fromEntries(
    await Promise.all(
      ASSET_FILES.map(async (name) => [name, await readFile(join(__dirname, 'console', name), 'utf8')]),
    ),
  ),
}));

export const handler = apiEntry(async () =>
  buildConsoleHandler(
    buildConsoleDeps(
      process.env,
      tableFromEnv(process.env),
      // The webhook key secret is read when first needed (adding or rotating an endpoint), not at the cold start.
      deferredKeyRing(() => loadKeyRing(process.env), { eager: false }),
      lambdaLogger(),
      assets,
    ),
  ),
);
