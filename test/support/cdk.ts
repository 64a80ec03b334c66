/** Synthesizing the stack in the CDK tests: the app's own context (cdk.json), and logical ids of constructs. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, CfnElement, type AppProps, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { OtpStack } from '../../lib/otp-stack';

/** The context `cdk synth` runs with (feature flags and the project's settings), from cdk.json. */
export const CDK_CONTEXT = (
  JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8')) as { context: object }
).context;

export type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/**
 * A test file's assemblies: an App given no `outdir` synthesizes into a `cdk.out*` directory of its own under the
 * system's temporary directory and leaves it there. Each `testApp` gets its own directory under one of the file's,
 * removed with everything in it after the file's tests.
 */
const assemblies = mkdtempSync(path.join(tmpdir(), 'otp-cdk-test-'));
afterAll(() => rmSync(assemblies, { recursive: true, force: true }));

/** An App whose assembly goes to a directory of its own, removed after the test file. */
export function testApp(props: AppProps = {}): App {
  return new App({ outdir: mkdtempSync(path.join(assemblies, 'cdk.out')), ...props });
}

/** The stack synthesized without bundling (bundles and cdk-nag are checked once, in otp-stack.test.ts). */
export function synthUnbundled(context: Record<string, unknown> = {}) {
  const app = testApp({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new OtpStack(app, 'OtpVerify');
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Resources;
  const cleanup = () => {
    if (app.outdir.startsWith(tmpdir())) rmSync(app.outdir, { recursive: true, force: true });
  };
  return { app, stack, template, resources, cleanup };
}

/** The logical id of a construct's CloudFormation resource in its stack. */
export function logicalIdIn(stack: Stack, construct: IConstruct): string {
  const element = construct instanceof CfnElement ? construct : construct.node.defaultChild;
  if (!(element instanceof CfnElement)) throw new Error(`${construct.node.path} has no CFN resource`);
  return stack.resolve(element.logicalId) as string;
}
