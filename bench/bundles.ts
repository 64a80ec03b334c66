/**
 * Part 4: each Lambda entry of the function manifest (lib/functions.ts) bundled with esbuild exactly as CDK's
 * NodejsFunction bundles it (the manifest's BUNDLING: bundle, platform node, target node22, format cjs, minify,
 * linked source map without sources content, main fields module,main, the AWS SDK bundled), its size, the AWS SDK
 * clients it holds, and its cold initialisation: a fresh `node` process that loads the bundle and serves one
 * event, median of several runs; and the same with the runtime's AWS SDK instead, to measure that choice.
 */
import { build, type BuildOptions } from 'esbuild';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { deriveKey } from '../functions/adapters/crypto';
import { verificationToItem } from '../functions/adapters/dynamodb/items';
import type { KeyGroup } from '../functions/adapters/keyring';
import { SIGNATURE_HEADER, signPayload } from '../functions/adapters/providers/signature';
import { awsClientsInMetafile } from '../lib/bundle-clients';
import { buildConsoleAssets } from '../lib/console-assets';
import {
  ESBUILD_OPTIONS,
  FUNCTIONS,
  FUNCTION_NAMES,
  RUNTIME_AWS_SDK_EXTERNAL,
  awsClientsOf,
  type FunctionName,
} from '../lib/functions';
import { consoleEvent, fetchEvent, checkEvent, receiptEvent, sendEvent, type Caller } from './events';
import { addTable, createAccount, type BenchDb, type NumberSource } from './setup';
import { median, round } from './stats';
import { startFakeAws } from './fake-aws';
import { warmEmulator } from './warm-emulator';

const ROOT = resolve(__dirname, '..');
/**
 * The cold-start baseline: a minimal handler that creates a DynamoDB document client and makes one `GetItem`
 * (bench/baseline-handler.ts) with the runtime's AWS SDK, run the same way as the functions. Every entry's spawn to
 * answer is also given as a ratio to its (`ratioToBaseline`): milliseconds on a shared machine move, the ratio less.
 */
export const BASELINE_ENTRY = 'baseline';
const BASELINE_SOURCE = 'bench/baseline-handler.ts';
/** The file esbuild bundles for an entry (the baseline is named, not a path). */
const sourceOf = (entry: string) => (entry === BASELINE_ENTRY ? BASELINE_SOURCE : entry);

/** Where an entry's AWS SDK comes from: bundled into it, or the one the Lambda runtime ships. */
type SdkChoice = 'bundled' | 'runtime';
const SDK_EXTERNAL: Record<SdkChoice, readonly string[]> = {
  bundled: ESBUILD_OPTIONS.external,
  runtime: RUNTIME_AWS_SDK_EXTERNAL,
};
/** The cold-start variant names of the two choices (ColdStart.variant). */
export const RUNTIME_SDK_VARIANT = "runtime's AWS SDK";
const SDK_VARIANT: Record<SdkChoice, string> = { bundled: 'AWS SDK bundled', runtime: RUNTIME_SDK_VARIANT };
/**
 * The deployed choice first, then the other. The functions bundle the SDK (lib/functions.ts BUNDLING); the
 * baseline, a bare function, uses the runtime's, as a handler written in the console does and as published
 * cold-start benchmarks measure. Each is measured the other way too.
 */
const sdkChoicesOf = (entry: string): [SdkChoice, SdkChoice] =>
  entry === BASELINE_ENTRY ? ['runtime', 'bundled'] : ['bundled', 'runtime'];
/** Functions whose cold start is measured (they serve an event with DynamoDB Local alone). */
const COLD_STARTED: readonly FunctionName[] = [
  'send',
  'check',
  'fetch',
  'receipt',
  'deliver',
  'afterWait',
  'sweeper',
  'console',
];
export const BUNDLE_LIMIT_BYTES = 400 * 1024;

export interface ColdStart {
  /**
   * Where the bundle's AWS SDK came from (`AWS SDK bundled`, `runtime's AWS SDK`). Results before `bundleAwsSDK`
   * name Node flags instead (`plain`: none, `--enable-source-maps`).
   */
  variant: string;
  /**
   * The run of the bundle as the stack deploys it (no Node flags; the AWS SDK bundled, the baseline's from the
   * runtime): the one the ratios and targets use.
   */
  deployed?: boolean;
  runs: number;
  /** From spawning `node` to the handler's answer, as the parent saw it. */
  spawnToResponseMs?: { median: number; min: number; max: number };
  /** `require` of the bundle (module evaluation). */
  requireMs?: number;
  /** The first invocation: building the dependencies, first DynamoDB connection, the event's requests. */
  firstInvokeMs?: number;
  /** The handler's answer (status code, or what a task returned). */
  answer: string;
  /**
   * Median spawn-to-answer of the baseline's cold starts made alternately with this entry's (one after each):
   * the same minutes of the same machine, so the ratio does not move with the load between parts of the run.
   */
  pairedBaselineMs?: number;
  /** Why the runs failed (e.g. a function that needs settings this bench does not give it). */
  error?: string;
}

export interface BundleResult {
  entry: string;
  /** The entry could not be bundled. */
  error?: string;
  bytes: number;
  kb: number;
  gzipKb: number;
  mapKb: number;
  underLimit: boolean;
  /** Largest contributors to the minified output, by package. */
  largest: { source: string; kb: number }[];
  /** The `@aws-sdk/client-*` packages the bundle holds (or, in older results, loads from the runtime), short names. */
  awsClients: string[];
  /** Whether those are exactly the clients the manifest's permissions call for (lib/functions.ts awsClientsOf). */
  clientsAsDeclared: boolean;
  cold: ColdStart[];
  /**
   * Requests the entry's cold runs made to the bench's other AWS endpoints (bench/fake-aws.ts): `StartExecution`
   * (one per run for the send: its answer waits for the start, as on AWS) and the key secret reads (one request
   * per run for the functions with keys: `GetSecretValue` for one group, `BatchGetSecretValue` for more).
   */
  workflowStarts?: number;
  secretReads?: number;
  /** Spawn-to-answer median (the deployed run's) over the baseline's, measured in the same run. */
  ratioToBaseline?: number;
}

interface WhatIf {
  variant: string;
  /** Minified JS bytes per entry. */
  kb: Record<string, number>;
}

export interface BundleResults {
  esbuildOptions: Record<string, unknown>;
  node: string;
  results: BundleResult[];
  /** Sizes of the same entries built with a change to the code or the bundling, to show what a fix buys. */
  whatIf: WhatIf[];
  /** The account console's page and files (console/ui, built by lib/console-assets.ts as the stack ships them). */
  consoleAssets?: { file: string; kb: number; gzipKb: number }[];
}

/** The console's files as the browser downloads them, reported beside the bundles. */
function consoleAssetSizes(): { file: string; kb: number; gzipKb: number }[] {
  return Object.entries(buildConsoleAssets().files).map(([file, content]) => ({
    file,
    kb: round(Buffer.byteLength(content) / 1024, 1),
    gzipKb: round(gzipSync(content).length / 1024, 1),
  }));
}

async function whatIfSizes(entries: string[]): Promise<WhatIf[]> {
  const variants: { variant: string; options: BuildOptions }[] = [
    {
      variant: "with the runtime's AWS SDK (bundleAwsSDK: false)",
      options: { external: [...RUNTIME_AWS_SDK_EXTERNAL] },
    },
  ];
  const results: WhatIf[] = [];
  for (const { variant, options } of variants) {
    const kb: Record<string, number> = {};
    for (const entry of entries) {
      try {
        const built = await build({
          ...CDK_ESBUILD_OPTIONS,
          mainFields: [...CDK_ESBUILD_OPTIONS.mainFields],
          external: [...CDK_ESBUILD_OPTIONS.external],
          ...options,
          entryPoints: [join(ROOT, sourceOf(entry))],
          outfile: join(ROOT, 'index.js'),
          absWorkingDir: ROOT,
          write: false,
        });
        const js = built.outputFiles.find((file) => file.path.endsWith('.js'));
        if (js) kb[entry] = round(js.contents.length / 1024, 1);
      } catch {
        // Reported as missing ('-') in the table.
      }
    }
    results.push({ variant, kb });
  }
  return results;
}

/** The options CDK passes to esbuild for the stack's functions (the manifest's BUNDLING). */
const CDK_ESBUILD_OPTIONS = ESBUILD_OPTIONS;

/** The entries the CDK stack deploys: the function manifest's. */
function lambdaEntries(): string[] {
  return FUNCTION_NAMES.map((name) => FUNCTIONS[name].entry);
}

/** The cold starts run with the stack's own Node flags (results before `deployed` was recorded: the flagged one). */
export function deployedRun(bundle: Pick<BundleResult, 'cold'>): ColdStart | undefined {
  return (
    bundle.cold.find((run) => run.deployed === true) ??
    bundle.cold.find((run) => run.deployed === undefined && run.variant !== 'plain')
  );
}

/** The manifest's name of an entry (none for the baseline). */
const functionNameOf = (entry: string): FunctionName | undefined =>
  FUNCTION_NAMES.find((candidate) => FUNCTIONS[candidate].entry === entry);

/** The key groups the manifest gives an entry (none for the baseline). */
function keyGroupsOf(entry: string): KeyGroup[] {
  const name = functionNameOf(entry);
  return name ? [...FUNCTIONS[name].keys] : [];
}

/** The manifest's clients for an entry, short names. */
function declaredClients(entry: string): string[] {
  const name = functionNameOf(entry);
  return name ? awsClientsOf(FUNCTIONS[name]).map((client) => client.replace('@aws-sdk/client-', '')) : [];
}

const RUNNER = `'use strict';
const { performance } = require('node:perf_hooks');
const t0 = performance.now();
const mod = require(process.env.BENCH_BUNDLE);
const t1 = performance.now();
const event = JSON.parse(process.env.BENCH_EVENT);
const endsAt = Date.now() + Number(process.env.BENCH_TIMEOUT_MS);
const context = { awsRequestId: 'cold-' + process.pid, functionName: 'bench-cold', getRemainingTimeInMillis: () => endsAt - Date.now() };
const report = (fields, code) => {
  process.stdout.write('\\nBENCH_RESULT ' + JSON.stringify(fields) + '\\n', () => process.exit(code));
};
Promise.resolve(mod.handler(event, context)).then(
  (result) => {
    const t2 = performance.now();
    const answer = result && result.statusCode !== undefined ? String(result.statusCode) : JSON.stringify(result && (result.next || result));
    report({ requireMs: t1 - t0, invokeMs: t2 - t1, answer }, 0);
  },
  (error) => report({ error: String(error && error.stack || error) }, 1),
);
`;

export async function measureBundles(
  db: BenchDb,
  numbers: NumberSource,
  options: { runs: number; deadline: number; only?: string[] },
): Promise<BundleResults> {
  const dir = mkdtempSync(join(tmpdir(), 'otp-bench-bundles-'));
  const masterKey = db.masterKey;
  const aws = await startFakeAws(masterKey);
  try {
    await warmEmulator(db);
    writeFileSync(join(dir, 'runner.cjs'), RUNNER);
    const results: BundleResult[] = [];
    // The baseline first: its bundle then runs beside every other entry's cold starts (see `pairedBaselineMs`).
    let pairedBaseline: (() => Promise<RunResult>) | undefined;
    const entries = lambdaEntries().filter(
      (entry) => !options.only || options.only.some((part) => entry.includes(part)),
    );
    for (const entry of [BASELINE_ENTRY, ...entries]) {
      const outdir = join(dir, basename(entry, '.ts'));
      const [deployedSdk, otherSdk] = sdkChoicesOf(entry);
      const bundleTo = (sdk: SdkChoice, outfile: string) =>
        build({
          ...CDK_ESBUILD_OPTIONS,
          mainFields: [...CDK_ESBUILD_OPTIONS.mainFields],
          external: [...SDK_EXTERNAL[sdk]],
          entryPoints: [join(ROOT, sourceOf(entry))],
          outfile,
          absWorkingDir: ROOT,
          metafile: true,
        });
      const js = join(outdir, 'index.js');
      const otherJs = join(outdir, 'other-sdk', 'index.js');
      let built: Awaited<ReturnType<typeof build>>;
      try {
        built = await bundleTo(deployedSdk, js);
        await bundleTo(otherSdk, otherJs);
      } catch (error) {
        results.push({ ...EMPTY_BUNDLE, entry, error: String(error).slice(0, 300) });
        continue;
      }
      const bytes = statSync(js).size;
      const output = Object.values(built.metafile?.outputs ?? {}).find((out) => out.entryPoint !== undefined);
      const bySource = new Map<string, number>();
      for (const [input, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
        const source = packageOf(input);
        bySource.set(source, (bySource.get(source) ?? 0) + bytesInOutput);
      }
      const largest = [...bySource]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 6)
        .map(([source, size]) => ({ source, kb: round(size / 1024, 1) }));
      const awsClients = built.metafile
        ? awsClientsInMetafile(built.metafile).map((client) => client.replace('@aws-sdk/client-', ''))
        : [];

      const cold: ColdStart[] = [];
      const startsBefore = aws.calls('StartExecution');
      const secretRequests = () => aws.calls('GetSecretValue') + aws.calls('BatchGetSecretValue');
      const readsBefore = secretRequests();
      // Cold starts for the functions on a request or delivery path; stream and queue consumers (webhooks)
      // would need AWS endpoints this bench does not fake, so only their size is reported.
      const name = functionNameOf(entry);
      const servable = entry === BASELINE_ENTRY || (name !== undefined && COLD_STARTED.includes(name));
      // Each function gets a table of its own: the sweeper must not find the sends' never-started deliveries.
      const coldDb = servable ? await addTable(db) : undefined;
      const caller = coldDb ? await createAccount(coldDb, 1000) : undefined;
      const endedSid = coldDb && caller ? await putEndedVerification(coldDb, caller) : undefined;
      // The bundle as deployed, paired with the baseline; beside it, fewer runs of the other SDK choice, so that
      // the report holds both measurements of the choice from the same run.
      for (const [sdk, bundle, runs] of [
        [deployedSdk, js, options.runs],
        [otherSdk, otherJs, Math.max(3, Math.ceil(options.runs / 2))],
      ] as const) {
        if (!coldDb || !caller || Date.now() > options.deadline) break;
        const run = () =>
          coldRun(
            join(dir, 'runner.cjs'),
            bundle,
            [],
            eventFor(entry, caller, numbers, masterKey, endedSid),
            {
              TABLE_NAME: coldDb.tableName,
              DYNAMODB_ENDPOINT: db.endpoint,
              // Read by the functions without key groups only; the others read their key secrets, as on AWS.
              OTP_MASTER_KEY: masterKey,
              // The function's own time-out counts down in its context, as Lambda's (the send bounds its charge by
              // it); the baseline's as an API function's.
              BENCH_TIMEOUT_MS: String((name ? FUNCTIONS[name].timeoutSeconds : 10) * 1000),
              ...aws.env(keyGroupsOf(entry)),
            },
          );
        const deployed = bundle === js;
        cold.push({
          ...(await coldStarts(SDK_VARIANT[sdk], runs, run, deployed ? pairedBaseline : undefined)),
          deployed,
        });
        if (entry === BASELINE_ENTRY) pairedBaseline ??= run;
      }
      results.push({
        entry,
        bytes,
        kb: round(bytes / 1024, 1),
        gzipKb: round(gzipSync(readFileSync(js)).length / 1024, 1),
        mapKb: round(statSync(`${js}.map`).size / 1024, 1),
        underLimit: bytes < BUNDLE_LIMIT_BYTES,
        largest,
        awsClients,
        clientsAsDeclared:
          entry === BASELINE_ENTRY || awsClients.join(',') === declaredClients(entry).join(','),
        cold,
        workflowStarts: aws.calls('StartExecution') - startsBefore,
        secretReads: secretRequests() - readsBefore,
      });
    }
    // The baseline first in the results, and every entry's ratio to it.
    const baseline = results.find((result) => result.entry === BASELINE_ENTRY);
    if (baseline) {
      results.splice(results.indexOf(baseline), 1);
      results.unshift(baseline);
    }
    const baselineMs = baseline && deployedRun(baseline)?.spawnToResponseMs?.median;
    for (const result of results) {
      const measured = deployedRun(result);
      const ms = measured?.spawnToResponseMs?.median;
      // Against the baseline runs made alternately with this entry's; the baseline's own runs otherwise.
      const against = measured?.pairedBaselineMs ?? baselineMs;
      if (ms !== undefined && against) result.ratioToBaseline = round(ms / against, 2);
    }
    const built = results.filter((result) => !result.error);
    const whatIf = await whatIfSizes(built.map((result) => result.entry));
    return {
      esbuildOptions: { ...CDK_ESBUILD_OPTIONS },
      node: process.version,
      results,
      whatIf,
      consoleAssets: consoleAssetSizes(),
    };
  } finally {
    await aws.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const EMPTY_BUNDLE = {
  bytes: 0,
  kb: 0,
  gzipKb: 0,
  mapKb: 0,
  underLimit: false,
  largest: [],
  awsClients: [],
  clientsAsDeclared: false,
  cold: [],
};

/**
 * `runs` cold starts after one uncounted run that warms the OS file cache, as on a real host; with `paired`,
 * a cold start of the baseline after each of them.
 */
async function coldStarts(
  variant: string,
  runs: number,
  once: () => Promise<RunResult>,
  paired?: () => Promise<RunResult>,
): Promise<ColdStart> {
  const pairedTimes: number[] = [];
  const spawnTimes: number[] = [];
  const requireTimes: number[] = [];
  const invokeTimes: number[] = [];
  let answer = '';
  try {
    for (let run = 0; run <= runs; run++) {
      const result = await once();
      const baselineResult = paired && (await paired());
      if (run === 0) continue;
      if (baselineResult) pairedTimes.push(baselineResult.spawnToResponseMs);
      spawnTimes.push(result.spawnToResponseMs);
      requireTimes.push(result.requireMs);
      invokeTimes.push(result.invokeMs);
      answer = result.answer;
    }
  } catch (error) {
    return { variant, runs: spawnTimes.length, answer, error: String(error).slice(0, 300) };
  }
  return {
    variant,
    runs: spawnTimes.length,
    spawnToResponseMs: {
      median: round(median(spawnTimes), 1),
      min: round(Math.min(...spawnTimes), 1),
      max: round(Math.max(...spawnTimes), 1),
    },
    requireMs: round(median(requireTimes), 1),
    firstInvokeMs: round(median(invokeTimes), 1),
    answer,
    ...(pairedTimes.length > 0 && { pairedBaselineMs: round(median(pairedTimes), 1) }),
  };
}

function packageOf(input: string): string {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (match) return match[1]!;
  return input.startsWith('functions/') ? 'functions/ (this project)' : input;
}

/**
 * A verification whose delivery ended (DELIVERED), for the delivery tasks' cold events: a task run again after a
 * receipt, one GetItem and the end. Not an unknown SID: the first task reads one again for 1.26 s, waiting for a
 * send's transaction that may not be visible yet (core/delivery.ts).
 */
async function putEndedVerification(db: BenchDb, caller: Caller): Promise<string> {
  const sid = `VE${randomBytes(16).toString('hex')}`;
  const now = new Date();
  const item = verificationToItem({
    sid,
    serviceSid: caller.serviceSid,
    to: '+447400000001',
    country: 'GB',
    status: 'PENDING',
    deliveryStatus: 'DELIVERED',
    channel: 'sms',
    price: 600,
    attemptsRemaining: 5,
    expiresAt: new Date(now.getTime() + 600_000).toISOString(),
    dateCreated: now.toISOString(),
    clientCode: false,
    message: 'Your code is {{code}}.',
    channels: ['sms'],
    deliveries: { 0: { channel: 'sms', outcome: 'accepted', messageId: 'SMbench', at: now.toISOString() } },
  });
  await db.documents.send(new PutCommand({ TableName: db.tableName, Item: item }));
  return sid;
}

/** One event per function, each a real request it serves (mostly a miss, so it changes little). */
function eventFor(
  entry: string,
  caller: Caller,
  numbers: NumberSource,
  masterKey: string,
  endedSid = `VE${randomBytes(16).toString('hex')}`,
): unknown {
  const unknownSid = `VE${randomBytes(16).toString('hex')}`;
  switch (entry === BASELINE_ENTRY ? BASELINE_ENTRY : functionNameOf(entry)) {
    case BASELINE_ENTRY:
      // A miss: the key of no item.
      return { id: unknownSid };
    case 'send':
      return sendEvent(caller, numbers.take());
    case 'check':
      return checkEvent(caller, unknownSid, '123456');
    case 'fetch':
      return fetchEvent(caller, unknownSid);
    case 'receipt': {
      const body = JSON.stringify({
        reference: `${unknownSid}.0`,
        messageId: 'SMbench',
        status: 'delivered',
      });
      return receiptEvent(
        body,
        signPayload(deriveKey(masterKey, 'receipt:carrier'), body, new Date()),
        SIGNATURE_HEADER,
      );
    }
    case 'console':
      // A signed-in user's first request: its services (none: one Query under the user).
      return consoleEvent('/me', { sub: `bench-${unknownSid}` });
    case 'deliver':
    case 'afterWait':
      return { sid: endedSid, channelIndex: 0, waitSeconds: 8, answers: [] };
    default:
      // A scheduled task (the sweeper): EventBridge's scheduled event.
      return {
        version: '0',
        id: randomBytes(8).toString('hex'),
        'detail-type': 'Scheduled Event',
        source: 'aws.events',
        account: '000000000000',
        time: new Date().toISOString(),
        region: 'us-east-1',
        resources: [],
        detail: {},
      };
  }
}

interface RunResult {
  spawnToResponseMs: number;
  requireMs: number;
  invokeMs: number;
  answer: string;
}

/** Spawns `node runner bundle`; resolves when the runner reports its answer (bounded by a 30 s time-out). */
function coldRun(
  runner: string,
  bundle: string,
  flags: string[],
  event: unknown,
  env: Record<string, string>,
): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...flags, runner], {
      // A clean environment: no loader flags of the parent (tsx), no AWS profile.
      env: {
        PATH: process.env.PATH ?? '',
        BENCH_BUNDLE: bundle,
        BENCH_EVENT: JSON.stringify(event),
        // Never look for credentials on the network (the instance metadata address): loopback traffic only.
        AWS_EC2_METADATA_DISABLED: 'true',
        // Where the runtime's-SDK builds find `@aws-sdk`, as Lambda's Node.js 22 does in /var/runtime (the deployed
        // builds bundle it and look nowhere).
        NODE_PATH: join(ROOT, 'node_modules'),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let result: RunResult | undefined;
    let failure: Error | undefined;
    const timer = setTimeout(() => {
      failure = new Error(`cold run of ${bundle} took over 30 s`);
      child.kill('SIGKILL');
    }, 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      const at = performance.now();
      stdout += chunk.toString();
      const line = result || failure ? undefined : /BENCH_RESULT (.*)\n/.exec(stdout)?.[1];
      if (!line) return;
      const parsed = JSON.parse(line) as {
        requireMs?: number;
        invokeMs?: number;
        answer?: string;
        error?: string;
      };
      if (parsed.error) {
        failure = new Error(`cold run of ${bundle} failed: ${parsed.error}`);
        return;
      }
      result = {
        spawnToResponseMs: at - started,
        requireMs: parsed.requireMs ?? Number.NaN,
        invokeMs: parsed.invokeMs ?? Number.NaN,
        answer: parsed.answer ?? '',
      };
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // Settle on exit, so runs never overlap.
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (result && !failure) resolvePromise(result);
      else
        reject(
          failure ??
            new Error(`cold run of ${bundle} exited with ${code} before answering: ${stderr.slice(-500)}`),
        );
    });
  });
}
