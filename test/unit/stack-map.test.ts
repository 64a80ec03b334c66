/**
 * Logged stacks point at the TypeScript sources without `--enable-source-maps` (the stack no longer sets it): a
 * bundle built as CDK builds it throws, and the logger maps its frames from the `.map` beside it, read once.
 */
import { build } from 'esbuild';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { jsonLogger } from '../../functions/adapters/logger';
import { stackMapper } from '../../functions/adapters/stack-map';
import { taskEntry } from '../../functions/wiring/entries';
import { ESBUILD_OPTIONS } from '../../lib/functions';

const FIXTURE = `export function fail(): never {
  const reason = 'fixture failure';
  throw new Error(reason);
}
`;
const THROW_LINE = 3;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'otp-stack-map-'));
  writeFileSync(path.join(dir, 'fixture.ts'), FIXTURE);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The fixture bundled into `out/` (with its map unless told otherwise), and the stack of its throw. */
async function thrownBy(out: string, sourcemap = true): Promise<string> {
  await build({
    ...ESBUILD_OPTIONS,
    mainFields: [...ESBUILD_OPTIONS.mainFields],
    external: [...ESBUILD_OPTIONS.external],
    sourcemap,
    entryPoints: [path.join(dir, 'fixture.ts')],
    outfile: path.join(dir, out, 'index.js'),
    absWorkingDir: dir,
  });
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a bundle built by the test
  const bundle = require(path.join(dir, out, 'index.js')) as { fail(): never };
  try {
    bundle.fail();
  } catch (error) {
    return (error as Error).stack!;
  }
  throw new Error('the fixture did not throw');
}

it('maps a minified bundle frame to its TypeScript file and the line of the throw, leaving other frames', async () => {
  const stack = await thrownBy('mapped');
  expect(stack).toMatch(/mapped\/index\.js:1:\d+\)/);
  const reads: string[] = [];
  const mapStack = stackMapper((file) => (reads.push(file), readFileSync(file, 'utf8')));
  const mapped = mapStack(stack)!;
  expect(mapped.split('\n')[1]).toMatch(new RegExp(`\\(fixture\\.ts:${THROW_LINE}:\\d+\\)$`));
  expect(mapped).not.toMatch(/mapped\/index\.js/);
  // The frames below the bundle's (this test, Jest) are as they were.
  expect(mapped.split('\n').slice(2)).toEqual(stack.split('\n').slice(2));
  // Read once, however many errors follow.
  mapStack(stack);
  mapStack(stack);
  expect(reads.filter((file) => file.endsWith(path.join('mapped', 'index.js.map')))).toHaveLength(1);
});

it('leaves a stack as it is when the bundle has no map, and looks for it once', async () => {
  const stack = await thrownBy('unmapped', false);
  let reads = 0;
  const mapStack = stackMapper((file) => {
    reads++;
    return readFileSync(file, 'utf8');
  });
  expect(mapStack(stack)).toBe(stack);
  const before = reads;
  expect(mapStack(stack)).toBe(stack);
  expect(reads).toBe(before);
});

it('the logger writes a logged error with its stack mapped', async () => {
  const stack = await thrownBy('logged');
  const error = Object.assign(new Error('fixture failure'), { stack });
  const lines: string[] = [];
  jsonLogger((line) => lines.push(line)).log('error', 'task.failed', { error });
  const logged = (JSON.parse(lines[0]!) as { error: { stack: string } }).error.stack;
  expect(logged).toMatch(new RegExp(`fixture\\.ts:${THROW_LINE}:\\d+`));
});

it('a delivery task that throws is logged by its entry (stack mapped), then rethrown for the retry', async () => {
  const stack = await thrownBy('task');
  const lines: string[] = [];
  const entry = taskEntry(
    () => Promise.resolve({ logger: jsonLogger((line) => lines.push(line)) }),
    () => Promise.reject(Object.assign(new Error('fixture failure'), { stack })),
  );
  await expect(entry({ sid: 'VE1', channelIndex: 0, waitSeconds: 8 })).rejects.toThrow('fixture failure');
  const logged = lines.map(
    (line) => JSON.parse(line) as { msg: string; sid?: string; error?: { stack: string } },
  );
  expect(logged.find((line) => line.msg === 'task.failed')).toMatchObject({
    sid: 'VE1',
    error: { stack: expect.stringMatching(new RegExp(`fixture\\.ts:${THROW_LINE}:\\d+`)) as unknown },
  });
});
