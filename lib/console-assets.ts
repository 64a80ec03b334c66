/**
 * The console's files (console/ui): the page, one script and one style sheet, bundled and minified by esbuild.
 * The local stack builds them in memory at start; the stack's bundling of the console function writes them beside
 * its bundle (lib/constructs/console.ts), where functions/entries/console.ts reads them.
 */
import { buildSync } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConsoleAssets } from '../functions/console/routes';

const UI = join(__dirname, '..', 'console', 'ui');

/** Browsers the script is built for (ES2022 with current evergreen versions). */
export const CONSOLE_SCRIPT_TARGETS = ['es2022', 'chrome110', 'firefox115', 'safari16'];

export function buildConsoleAssets(): ConsoleAssets {
  const script = buildSync({
    entryPoints: [join(UI, 'main.ts')],
    bundle: true,
    minify: true,
    format: 'iife',
    target: CONSOLE_SCRIPT_TARGETS,
    write: false,
    legalComments: 'none',
    logLevel: 'error',
  });
  const style = buildSync({
    entryPoints: [join(UI, 'style.css')],
    bundle: true,
    minify: true,
    write: false,
    logLevel: 'error',
  });
  return {
    files: {
      'index.html': readFileSync(join(UI, 'index.html'), 'utf8'),
      'app.js': script.outputFiles[0]!.text,
      'app.css': style.outputFiles[0]!.text,
    },
  };
}
