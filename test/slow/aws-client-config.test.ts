/**
 * Every AWS SDK client the functions build has a connect and a request time-out and bounded tries, all from
 * functions/adapters/aws-client-config.ts: the source's `new …Client(` calls are enumerated, each bundle's
 * clients (lib/functions.ts `awsClientsOf`, which test/slow/bundles.test.ts holds to the real bundles) have
 * limits that fit their function's time-out, and a client pointed at an endpoint that never answers gives up.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import * as path from 'node:path';
import {
  AWS_CALL_LIMITS,
  worstCallMs,
  type AwsCallLimits,
  type AwsClientPackage,
} from '../../functions/adapters/aws-client-config';
import { SqsWebhookQueue } from '../../functions/adapters/webhooks/sqs-queue';
import { loadKeyRing } from '../../functions/wiring/keys';
import {
  FUNCTIONS,
  PROVIDER_FUNCTIONS,
  awsClientsOf,
  type AwsClient,
  type FunctionSpec,
} from '../../lib/functions';

const ROOT = path.join(__dirname, '..', '..');

// A client package added to the manifest without limits fails the type check here.
const limitsOfEveryBundledClient: Record<AwsClient, AwsCallLimits> = AWS_CALL_LIMITS;

const SPECS: [string, FunctionSpec][] = [...Object.entries(FUNCTIONS), ...Object.entries(PROVIDER_FUNCTIONS)];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The text between the parentheses that open at `open`. */
function argumentsAt(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    if (text[i] === ')' && --depth === 0) return text.slice(open + 1, i);
  }
  throw new Error('unbalanced parentheses');
}

/** Every `new <Name>Client(...)` under functions/ (what the bundles are built from). */
function clientConstructions() {
  return sourceFiles(path.join(ROOT, 'functions')).flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    return [...text.matchAll(/new\s+(?:[\w$]+\.)?([A-Z][\w$]*Client)\s*\(/g)].map((match) => ({
      site: `${path.relative(ROOT, file)}: new ${match[1]}`,
      className: match[1]!,
      args: argumentsAt(text, match.index + match[0].length - 1),
    }));
  });
}

test('every AWS client built under functions/ takes its limits from awsClientConfig, for its own package', () => {
  const constructions = clientConstructions();
  // The scan finds the clients (so a broken pattern cannot pass by finding none).
  expect(constructions.length).toBeGreaterThanOrEqual(Object.keys(AWS_CALL_LIMITS).length);
  const configured = new Set<string>();
  for (const { site, className, args } of constructions) {
    const pkg = /\.\.\.awsClientConfig\(\s*'([^']+)'\s*\)/.exec(args)?.[1];
    expect({ site, usesAwsClientConfig: pkg !== undefined }).toEqual({ site, usesAwsClientConfig: true });
    expect(Object.keys(AWS_CALL_LIMITS)).toContain(pkg);
    // The limits named are those of the class's own package.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    expect({ site, pkg, exported: typeof (require(pkg!) as Record<string, unknown>)[className] }).toEqual({
      site,
      pkg,
      exported: 'function',
    });
    configured.add(pkg!);
  }
  // Every client a bundle holds is built somewhere checked above.
  const bundled = new Set(SPECS.flatMap(([, spec]) => awsClientsOf(spec)));
  expect([...bundled].filter((pkg) => !configured.has(pkg))).toEqual([]);
});

test('the worst call of each client a function holds ends inside that function’s time-out', () => {
  const tooSlow = SPECS.flatMap(([name, spec]) =>
    awsClientsOf(spec)
      .filter((pkg) => worstCallMs(limitsOfEveryBundledClient[pkg]) >= spec.timeoutSeconds * 1000)
      .map((pkg) => `${name}: ${pkg}`),
  );
  expect(tooSlow).toEqual([]);
});

describe('a client whose endpoint accepts the connection and never answers', () => {
  let sockets: Socket[] = [];
  const silent = createServer((socket) => sockets.push(socket));
  let endpoint = '';
  const saved = { ...process.env };

  beforeAll(async () => {
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    endpoint = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    // The SDK's own per-service endpoint variables: the clients under test are the ones the code builds.
    Object.assign(process.env, {
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
      AWS_ENDPOINT_URL_SQS: endpoint,
    });
  });

  afterAll(async () => {
    process.env = saved;
    for (const socket of sockets) socket.destroy();
    sockets = [];
    await new Promise((resolve) => silent.close(resolve));
  });

  /** How long `call` took to fail, and with what. */
  async function failure(call: () => Promise<unknown>): Promise<{ name: string; ms: number }> {
    const started = Date.now();
    try {
      await call();
    } catch (error) {
      return { name: (error as Error).name, ms: Date.now() - started };
    }
    throw new Error('the call succeeded against a silent endpoint');
  }

  const check = (result: { name: string; ms: number }, pkg: AwsClientPackage) => {
    expect(result.name).toBe('TimeoutError');
    expect(result.ms).toBeGreaterThanOrEqual(AWS_CALL_LIMITS[pkg].requestTimeoutMs - 100);
    expect(result.ms).toBeLessThan(worstCallMs(AWS_CALL_LIMITS[pkg]) + 1000);
  };

  test('the key secrets read and the webhook enqueue give up with a time-out', async () => {
    const secretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:otp-code-hash';
    const [keys, enqueue] = await Promise.all([
      failure(() => loadKeyRing({ OTP_CODE_HASH_SECRET_ARN: secretArn })),
      failure(() =>
        new SqsWebhookQueue(`${endpoint}/123456789012/webhooks`, undefined).enqueue([
          {
            job: { kind: 'expire', serviceSid: 'VA1', verificationSid: 'VE1', expiresAt: '' },
            delaySeconds: 0,
          },
        ]),
      ),
    ]);
    check(keys, '@aws-sdk/client-secrets-manager');
    check(enqueue, '@aws-sdk/client-sqs');
  }, 30_000);
});
