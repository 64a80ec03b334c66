/**
 * The deliver function's IAM statements, as `cdk synth` gives them for the provider simulator's identities: the
 * simulator authorizes each AWS request against them (local/iam.ts), so a grant the stack builds wrong is denied
 * here as it would be on AWS. Synthesizing takes seconds, so the statements are kept in the OS's temporary
 * folder under a hash of everything that shapes them (lib/, cdk.json, the context): any change synthesizes anew.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { IamScope, IamStatement } from './iam';
import { roleStatements } from './iam';

const ROOT = path.join(__dirname, '..');

function sourcesHash(context: object): string {
  const hash = createHash('sha256').update(JSON.stringify(context));
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.ts')) hash.update(file).update(readFileSync(file));
    }
  };
  walk(path.join(ROOT, 'lib'));
  // The manifest and the receipt event lists that lib/ imports from functions/ shape the grants too.
  hash.update(readFileSync(path.join(ROOT, 'cdk.json')));
  hash.update(readFileSync(path.join(ROOT, 'functions', 'adapters', 'providers', 'aws-events.ts')));
  return hash.digest('hex').slice(0, 24);
}

/** The deliver role's statements in the stack synthesized with `context` (merged over cdk.json's) for `scope`. */
export function deliverGrants(context: Record<string, unknown>, scope: IamScope): IamStatement[] {
  const key = sourcesHash({ context, scope });
  const cacheDir = path.join(tmpdir(), 'otp-provider-grants');
  const cacheFile = path.join(cacheDir, `${key}.json`);
  try {
    return JSON.parse(readFileSync(cacheFile, 'utf8')) as IamStatement[];
  } catch {
    // Not synthesized yet for these sources.
  }
  // Loaded here, with `require` (jest runs no dynamic import): the CDK only when the simulator runs, and only on
  // a cache miss.
  /* eslint-disable @typescript-eslint/no-require-imports -- see above */
  const { App } = require('aws-cdk-lib') as typeof import('aws-cdk-lib');
  const { Template } = require('aws-cdk-lib/assertions') as typeof import('aws-cdk-lib/assertions');
  const { OtpStack } = require('../lib/otp-stack') as typeof import('../lib/otp-stack');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const cdkContext = (JSON.parse(readFileSync(path.join(ROOT, 'cdk.json'), 'utf8')) as { context: object })
    .context;
  const app = new App({ context: { ...cdkContext, 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new OtpStack(app, 'OtpLocal', { env: { account: scope.account, region: scope.region } });
  const template = Template.fromStack(stack).toJSON() as Parameters<typeof roleStatements>[0];
  const role = stack.functions.deliver.role!.node.defaultChild as Parameters<typeof stack.getLogicalId>[0];
  const statements = roleStatements(template, stack.resolve(stack.getLogicalId(role)) as string, scope);
  if (app.outdir.startsWith(tmpdir())) rmSync(app.outdir, { recursive: true, force: true });
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(cacheFile, JSON.stringify(statements));
  return statements;
}
