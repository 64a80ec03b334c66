/**
 * Each function's bundle, built with esbuild as CDK builds it (lib/functions.ts ESBUILD_OPTIONS), imports
 * exactly the AWS SDK clients its manifest entry's permissions call for: no client a function never calls is
 * loaded at its cold start (each entry is its own composition root, functions/wiring/).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { awsClientsInMetafile } from '../../lib/bundle-clients';
import {
  FUNCTIONS,
  FUNCTION_NAMES,
  PROVIDER_FUNCTIONS,
  PROVIDER_FUNCTION_NAMES,
  awsClientsOf,
  ESBUILD_OPTIONS,
  SDK_PARTS_NEVER_LOADED_ON_LAMBDA,
  type FunctionName,
  type ProviderFunctionName,
} from '../../lib/functions';

const ROOT = path.join(__dirname, '..', '..');

/** The bundle of `entry` as CDK builds it, not written: its metafile. */
async function metafileOf(entry: string) {
  const result = await build({
    ...ESBUILD_OPTIONS,
    mainFields: [...ESBUILD_OPTIONS.mainFields],
    external: [...ESBUILD_OPTIONS.external],
    entryPoints: [path.join(ROOT, entry)],
    outfile: path.join(ROOT, 'index.js'),
    absWorkingDir: ROOT,
    write: false,
    metafile: true,
  });
  return result.metafile;
}

/** The `@aws-sdk/client-*` packages a bundle of `entry` holds (the SDK is bundled) or leaves to the runtime. */
async function awsClientImports(entry: string): Promise<string[]> {
  return awsClientsInMetafile(await metafileOf(entry));
}

test.each(FUNCTION_NAMES)('the %s bundle holds exactly the AWS clients of its permissions', async (name) => {
  expect(await awsClientImports(FUNCTIONS[name].entry)).toEqual(awsClientsOf(FUNCTIONS[name]));
});

test.each(PROVIDER_FUNCTION_NAMES)(
  'the %s bundle holds exactly the AWS clients of its permissions',
  async (name) => {
    expect(await awsClientImports(PROVIDER_FUNCTIONS[name].entry)).toEqual(
      awsClientsOf(PROVIDER_FUNCTIONS[name]),
    );
  },
);

test('the provider receipt functions hold no client but DynamoDB (no key, no provider SDK)', () => {
  for (const name of PROVIDER_FUNCTION_NAMES) {
    expect(awsClientsOf(PROVIDER_FUNCTIONS[name])).toEqual(['@aws-sdk/client-dynamodb']);
  }
});

/**
 * A module a bundle reaches only through `import()` makes esbuild wrap every module the two share in a lazy
 * initializer (lib/functions.ts, SDK_PARTS_NEVER_LOADED_ON_LAMBDA): no bundle may hold one. A new SDK version that
 * imports another part this way fails here; leave it out too if Lambda never loads it.
 */
test.each([...FUNCTION_NAMES, ...PROVIDER_FUNCTION_NAMES])(
  'the %s bundle holds no module it imports dynamically (each would make what it shares lazy)',
  async (name) => {
    const spec =
      name in FUNCTIONS ? FUNCTIONS[name as FunctionName] : PROVIDER_FUNCTIONS[name as ProviderFunctionName];
    const metafile = await metafileOf(spec.entry);
    const bundledDynamically = Object.entries(metafile.inputs).flatMap(([input, { imports }]) =>
      imports
        .filter((imported) => imported.kind === 'dynamic-import' && !imported.external)
        .map((imported) => `${input} -> ${imported.path}`),
    );
    expect(bundledDynamically).toEqual([]);
    // What is left out is left out of the output too, not merely marked.
    const output = Object.values(metafile.outputs).find((out) => out.entryPoint);
    const leftOut = Object.entries(output?.inputs ?? {})
      .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
      .map(([input]) => input)
      .filter((input) =>
        SDK_PARTS_NEVER_LOADED_ON_LAMBDA.some((part) =>
          input.startsWith(
            `node_modules/${part.replace('@smithy/core/event-streams', '@smithy/core/dist-es/submodules/event-streams')}/`,
          ),
        ),
      );
    expect(leftOut).toEqual([]);
  },
);

/**
 * Builds a bundle as CDK does (with `options` added) into a directory of its own, and gives `use` a way to run
 * code in a fresh Node.js there, as Lambda loads a bundle: no node_modules to fall back on, so the bundle must
 * hold what it runs. The directory is removed after.
 */
async function withBundle(
  options: Pick<BuildOptions, 'entryPoints' | 'stdin' | 'plugins'>,
  use: (run: (code: (outfile: string) => string, env?: Record<string, string>) => string) => void,
): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'otp-bundle-'));
  try {
    const outfile = path.join(dir, 'index.js');
    await build({
      ...ESBUILD_OPTIONS,
      mainFields: [...ESBUILD_OPTIONS.mainFields],
      external: [...ESBUILD_OPTIONS.external],
      ...options,
      outfile,
      absWorkingDir: ROOT,
    });
    use((code, env = {}) =>
      execFileSync(process.execPath, ['-e', code(JSON.stringify(outfile))], {
        encoding: 'utf8',
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', AWS_REGION: 'us-east-1', ...env },
      }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("a bundled client gets the role's credentials from the environment, as on Lambda, without the parts left out", async () => {
  // The functions' own client factory, bundled as they are.
  const stdin = {
    contents:
      "import { createDynamoClient } from './functions/adapters/dynamodb/client';\n" +
      'export const credentials = () => createDynamoClient().config.credentials();',
    resolveDir: ROOT,
    sourcefile: 'credentials-probe.ts',
    loader: 'ts' as const,
  };
  await withBundle({ stdin }, (run) => {
    const probe = (outfile: string) =>
      `require(${outfile}).credentials().then(` +
      '(c) => console.log(JSON.stringify({ key: c.accessKeyId, token: c.sessionToken })),' +
      '(e) => console.log(JSON.stringify({ error: String(e.message) })));';
    const lambdaEnv = {
      AWS_ACCESS_KEY_ID: 'ASIAPROBE',
      AWS_SECRET_ACCESS_KEY: 'probe-secret',
      AWS_SESSION_TOKEN: 'probe-token',
    };
    expect(JSON.parse(run(probe, lambdaEnv))).toEqual({ key: 'ASIAPROBE', token: 'probe-token' });
    // Without them (never on Lambda) the chain reaches a part left out, and fails naming it rather than running
    // some other copy of the SDK.
    const without = JSON.parse(run(probe, { AWS_EC2_METADATA_DISABLED: 'true' })) as { error?: string };
    expect(without.error).toMatch(/Cannot find (package|module) '@aws-sdk\/credential-provider-ini'/);
  });
});

/**
 * zod costs a bundle size and require time at every cold start, far more in its classic API than in its
 * functional one (`zod/mini`); docs/bench.md. Only the functions that validate HTTP requests
 * hold it (send, check, console), as zod/mini; the delivery side parses its few flat shapes by hand.
 */
const VALIDATES_HTTP_REQUESTS: readonly string[] = ['send', 'check', 'console'];

test.each([...FUNCTION_NAMES, ...PROVIDER_FUNCTION_NAMES])(
  'the %s bundle holds no classic zod, and zod at all only if it validates HTTP requests',
  async (name) => {
    const spec =
      name in FUNCTIONS ? FUNCTIONS[name as FunctionName] : PROVIDER_FUNCTIONS[name as ProviderFunctionName];
    // What the output holds: a file another one imports but tree shaking dropped is an input of no bytes.
    const output = Object.values((await metafileOf(spec.entry)).outputs).find((out) => out.entryPoint);
    const zod = Object.entries(output?.inputs ?? {})
      .filter(([input, { bytesInOutput }]) => input.includes('node_modules/zod/') && bytesInOutput > 0)
      .map(([input]) => input);
    expect(zod.filter((input) => input.includes('/classic/'))).toEqual([]);
    expect(zod.length > 0).toBe(VALIDATES_HTTP_REQUESTS.includes(name));
  },
);

test('the send bundle reads the provider configuration but holds no provider (the deliver task calls them)', async () => {
  const output = Object.values((await metafileOf(FUNCTIONS.send.entry)).outputs).find(
    (out) => out.entryPoint,
  );
  const held = Object.entries(output?.inputs ?? {})
    .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
    .map(([input]) => input);
  expect(held).toContain('functions/adapters/providers/config.ts');
  expect(
    held.filter((input) => /functions\/(wiring\/providers|adapters\/providers\/(?!config))/.test(input)),
  ).toEqual([]);
});

test('the deliver bundle answers the providers check without phone metadata (the admin command picks the numbers)', async () => {
  const output = Object.values((await metafileOf(FUNCTIONS.deliver.entry)).outputs).find(
    (out) => out.entryPoint,
  );
  const held = Object.entries(output?.inputs ?? {})
    .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
    .map(([input]) => input);
  expect(held).toContain('functions/wiring/provider-check.ts');
  expect(held.filter((input) => input.includes('node_modules/libphonenumber-js/'))).toEqual([]);
});

test('only the console and the webhook sender hold the URL policy and ipaddr.js (the events function checks no URL)', async () => {
  const holders: string[] = [];
  for (const name of FUNCTION_NAMES) {
    const output = Object.values((await metafileOf(FUNCTIONS[name].entry)).outputs).find(
      (out) => out.entryPoint,
    );
    const held = Object.entries(output?.inputs ?? {}).filter(([, { bytesInOutput }]) => bytesInOutput > 0);
    if (held.some(([input]) => input.includes('node_modules/ipaddr.js/'))) holders.push(name);
  }
  // The console validates the endpoint URLs a user registers; the sender checks each address it connects to.
  expect(holders.sort()).toEqual(['console', 'webhookSender']);
});

test.each(['afterWait', 'sweeper'] as const)(
  '%s holds no provider and no key (it moves a delivery on or ends it; the deliver task sends)',
  async (name) => {
    const output = Object.values((await metafileOf(FUNCTIONS[name].entry)).outputs).find(
      (out) => out.entryPoint,
    );
    const held = Object.entries(output?.inputs ?? {})
      .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
      .map(([input]) => input);
    expect(
      held.filter((input) => /functions\/(wiring\/(providers|keys)|adapters\/providers\/)/.test(input)),
    ).toEqual([]);
  },
);

test('the manifest declares what each function calls', () => {
  expect(Object.fromEntries(FUNCTION_NAMES.map((name) => [name, awsClientsOf(FUNCTIONS[name])]))).toEqual({
    send: ['@aws-sdk/client-dynamodb', '@aws-sdk/client-secrets-manager', '@aws-sdk/client-sfn'],
    check: ['@aws-sdk/client-dynamodb', '@aws-sdk/client-secrets-manager'],
    // Fetch reads the API key tag's secret.
    fetch: ['@aws-sdk/client-dynamodb', '@aws-sdk/client-secrets-manager'],
    receipt: ['@aws-sdk/client-dynamodb', '@aws-sdk/client-secrets-manager'],
    // The only sender: the AWS messaging clients too.
    deliver: [
      '@aws-sdk/client-dynamodb',
      '@aws-sdk/client-pinpoint-sms-voice-v2',
      '@aws-sdk/client-secrets-manager',
      '@aws-sdk/client-socialmessaging',
    ],
    afterWait: ['@aws-sdk/client-dynamodb'],
    sweeper: ['@aws-sdk/client-dynamodb', '@aws-sdk/client-sfn'],
    webhookEvents: ['@aws-sdk/client-dynamodb', '@aws-sdk/client-sqs'],
    // The guard's stream consumer: its own items in the table, nothing else.
    guardSignals: ['@aws-sdk/client-dynamodb'],
    webhookSender: ['@aws-sdk/client-dynamodb', '@aws-sdk/client-secrets-manager', '@aws-sdk/client-sqs'],
    // The console: the table, and the webhook key to seal signing secrets.
    console: ['@aws-sdk/client-dynamodb', '@aws-sdk/client-secrets-manager'],
  });
});

/**
 * Marks each AWS client package's module as it runs: its client class's file (`dist-es/<Name>Client.js`), as
 * esbuild bundles it, first records the package's name on `globalThis.__otpClientsRun`. (Not the package's index:
 * the SDK's packages declare no side effects, so esbuild drops an index that only re-exports, marker and all.)
 */
const markClientModules: Plugin = {
  name: 'mark-client-modules',
  setup(onBuild) {
    onBuild.onLoad(
      { filter: /node_modules[\\/]@aws-sdk[\\/]client-[^\\/]+[\\/]dist-es[\\/][A-Za-z0-9]+Client\.js$/ },
      (args) => {
        const client = /@aws-sdk[\\/](client-[^\\/]+)/.exec(args.path)![1]!;
        const marker = `(globalThis.__otpClientsRun ??= []).push(${JSON.stringify(client)});\n`;
        return { contents: marker + readFileSync(args.path, 'utf8'), loader: 'js' };
      },
    );
  },
};

test('the deliver bundle holds the AWS messaging clients but runs them at its first send over them, not at its cold start', async () => {
  const entryPoints = [path.join(ROOT, FUNCTIONS.deliver.entry)];
  await withBundle({ entryPoints, plugins: [markClientModules] }, (run) => {
    // Loaded as Lambda loads it; then which clients' modules ran.
    const ran = run(
      (outfile) =>
        `require(${outfile});` +
        `console.log(JSON.stringify([...new Set(globalThis.__otpClientsRun ?? [])].sort()))`,
    );
    expect(JSON.parse(ran.trim().split('\n').pop()!)).toEqual(['client-dynamodb', 'client-secrets-manager']);
  });
});
