/**
 * `npm run admin` in-process, as an operator runs it against a deployed table (`--endpoint`, `--table`): here a
 * test's table on DynamoDB Local. What it printed and its exit code, for tests to read as the operator would.
 */
import { runAdmin, type AdminOptions } from '../../scripts/admin/cli';
import { dynamoEndpoint } from './harness';

export interface AdminRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The table a command runs against, and the stack's master key, which tags the API keys a command makes. */
export interface AdminTarget {
  tableName: string;
  masterKey?: string;
}

/**
 * Runs one command; `on` adds the table's `--endpoint` and `--table` (none: the command finds its own target, as
 * a test of that finding needs). Never the developer's running `npm start` unless `options` says so.
 */
export async function runAdminCommand(
  args: string[],
  on: AdminTarget | undefined,
  options: AdminOptions = {},
): Promise<AdminRun> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await runAdmin(
    [...args, ...(on ? ['--endpoint', dynamoEndpoint(), '--table', on.tableName] : [])],
    { out: (text) => stdout.push(text), err: (text) => stderr.push(text) },
    {
      readLocalStack: () => undefined,
      ...(on?.masterKey !== undefined && { env: { OTP_MASTER_KEY: on.masterKey } }),
      ...options,
    },
  );
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

/** A command with `--json` that must succeed (exit 0, nothing on stderr): its parsed output. */
export async function adminJson<T = Record<string, unknown>>(
  args: string[],
  on: AdminTarget,
  options: AdminOptions = {},
): Promise<T> {
  const run = await runAdminCommand([...args, '--json'], on, options);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as T;
}
