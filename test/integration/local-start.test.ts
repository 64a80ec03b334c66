/**
 * `npm start` stops what it started when it cannot finish starting, not only on Ctrl-C: a port already taken
 * (another `npm start` on the same machine, say) must not leave DynamoDB Local's Java running behind it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../scripts/check-links';
import { startDynamoLocal } from '../../local/dynamodb-local';

/** The processes whose command line names `text` (the data folder of one DynamoDB Local). */
function processesNaming(text: string): number[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(text))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

let taken: Server;
let port: number;
let dataDir: string;

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((listening) => taken.listen(0, '127.0.0.1', listening));
  const address = taken.address();
  port = typeof address === 'object' && address ? address.port : 0;
  dataDir = mkdtempSync(join(tmpdir(), 'otp-start-'));
});

afterAll(async () => {
  // Whatever the outcome, leave no Java of this test behind.
  for (const pid of processesNaming(dataDir)) process.kill(pid, 'SIGKILL');
  await new Promise((closed) => taken.close(closed));
  rmSync(dataDir, { recursive: true, force: true });
});

it('a port already in use fails the start, and DynamoDB Local is stopped with it', async () => {
  const child = spawn(
    join(REPO_ROOT, 'node_modules', '.bin', 'tsx'),
    ['local/start.ts', '--port', String(port), '--persist', dataDir],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, OTP_GUARD_CONSUMER: 'off' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((exited) => child.once('exit', exited));

  expect({ code, failed: stderr.includes('EADDRINUSE') }).toEqual({ code: 1, failed: true });
  // DynamoDB Local had started (the data folder names it) before the API's port was found taken.
  expect(stderr).toContain('Starting DynamoDB Local');
  expect(processesNaming(dataDir)).toEqual([]);
}, 90_000);

it('a DynamoDB Local that does not answer in time fails its start and is stopped with it', async () => {
  const slowDir = mkdtempSync(join(tmpdir(), 'otp-slow-'));
  try {
    // Java needs about 2 s to answer: a millisecond is never enough.
    await expect(startDynamoLocal({ persistDir: slowDir, readyWithinMs: 1 })).rejects.toThrow(
      'DynamoDB Local did not answer',
    );
    expect(processesNaming(slowDir)).toEqual([]);
  } finally {
    for (const pid of processesNaming(slowDir)) process.kill(pid, 'SIGKILL');
    rmSync(slowDir, { recursive: true, force: true });
  }
}, 60_000);
