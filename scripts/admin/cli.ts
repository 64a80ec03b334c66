/**
 * `npm run admin -- <command>`: argument parsing, target selection, output and exit codes. The work is
 * done by `AccountStore`; the commands themselves are in `./commands`.
 *
 * Exit codes: 0 done, 1 the command could not be carried out (no such service, DynamoDB unreachable...),
 * 2 the command line is wrong. Errors are one clear line on stderr, never a stack trace
 * (`OTP_ADMIN_DEBUG=1` prints it for unexpected errors).
 */
import { parseArgs } from 'node:util';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { AccountStore } from '../../functions/adapters/dynamodb/accounts';
import { DynamoWebhookEndpoints } from '../../functions/adapters/dynamodb/webhooks';
import { WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { cryptoRandom } from '../../functions/adapters/crypto';
import { KEY_GROUPS, groupKeyRing, keySecretRoot, type KeySource } from '../../functions/adapters/keyring';
import { readLocalStackState, type LocalStackState } from '../../local/stack';
import {
  COMMANDS,
  GLOBAL_OPTIONS,
  OPTIONS,
  usageLine,
  type Command,
  type OptionName,
  type OptionValues,
} from './commands';
import { AdminError, UsageError } from './validate';

export interface AdminIo {
  /** The command's output: one call per run, without the trailing newline. */
  out(text: string): void;
  /** Error messages and, after a usage error, the usage. */
  err(text: string): void;
}

export interface AdminOptions {
  /** Finds the running `npm start`; tests replace it. */
  readLocalStack?: () => LocalStackState | undefined;
  /** For `OTP_ADMIN_DEBUG`; defaults to this process's environment. */
  env?: Record<string, string | undefined>;
}

export interface AdminTarget {
  tableName: string;
  endpoint?: string;
  region?: string;
  /** How the table was found, for messages. */
  source: 'local-stack' | 'options';
  /** The running local stack's master key (for sealing webhook secrets). */
  masterKey?: string;
}

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

const TARGET_USAGE =
  'Target: the running `npm start` by default; --table NAME [--region R] for a deployed table (default AWS ' +
  'credentials; the stack output TableName); --endpoint URL --table NAME for any DynamoDB Local.';

export async function runAdmin(argv: string[], io: AdminIo, options: AdminOptions = {}): Promise<number> {
  let values: OptionValues = {};
  let command: Command | undefined;
  try {
    const parsed = parseCommandLine(argv);
    values = parsed.values;
    const { positionals } = parsed;

    if (positionals.length === 0 || positionals[0] === 'help') {
      const topic = positionals.slice(1);
      if (positionals.length === 0 && !values.help) {
        io.err(generalHelp());
        return EXIT.usage;
      }
      io.out(values.json ? JSON.stringify(helpJson(topic)) : helpText(topic));
      return EXIT.ok;
    }

    command = findCommand(positionals);
    if (values.help) {
      io.out(values.json ? JSON.stringify(helpJson(command.words)) : commandHelp(command));
      return EXIT.ok;
    }
    checkOptions(command, values);
    const args = positionals.slice(command.words.length);
    if (args.length !== command.args.length) {
      throw new UsageError(
        `${command.words.join(' ')} takes ${command.args.length === 0 ? 'no arguments' : command.args.join(' ')}, ` +
          `got ${args.length === 0 ? 'none' : args.map((arg) => JSON.stringify(arg)).join(' ')}`,
      );
    }
    // Arguments are checked before the target: a typo fails fast, even with no stack running.
    const work = command.prepare(args, values);
    const target = resolveTarget(values, options.readLocalStack ?? readLocalStackState);
    const client = createDocumentClient({
      ...(target.endpoint && { endpoint: target.endpoint }),
      ...(target.region && { region: target.region }),
    });
    try {
      const accounts = new AccountStore(client, target.tableName, cryptoRandom);
      const webhooks = new DynamoWebhookEndpoints(client, target.tableName);
      const webhookVault = async () =>
        new WebhookSecretVault(await webhookKeyFor(target, values, options.env ?? process.env));
      const output = await work({
        accounts,
        webhooks,
        webhookVault,
        targetDescription: describeTarget(target),
      }).catch((error: unknown) => {
        throw explainAwsError(error, target);
      });
      io.out(values.json ? JSON.stringify(output.json) : output.text);
      return EXIT.ok;
    } finally {
      client.destroy();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`admin: ${error.message}`);
      io.err(command ? `Usage: ${usageLine(command)}` : 'Run `npm run admin -- help` for the commands.');
      return EXIT.usage;
    }
    if (error instanceof AdminError) {
      io.err(`admin: ${error.message}`);
      return EXIT.failed;
    }
    const env = options.env ?? process.env;
    io.err(`admin: unexpected error: ${describeUnknown(error)}`);
    if (env.OTP_ADMIN_DEBUG && error instanceof Error && error.stack) io.err(error.stack);
    return EXIT.failed;
  }
}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    // parseArgs' own errors (unknown option, missing value) are usage errors.
    const code = (error as { code?: string }).code;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      // Node's message goes on about positionals starting with '-': the first sentence is the point.
      const message = (error as Error).message;
      if (/^Unknown option '-\d/.test(message)) throw new UsageError('Amounts cannot be negative');
      throw new UsageError(message.split('. ')[0]!);
    }
    if (code?.startsWith('ERR_PARSE_ARGS')) throw new UsageError((error as Error).message);
    throw error;
  }
}

/** The command whose words begin the positionals, e.g. `key revoke` in `key revoke VA… 3f2a…`. */
function findCommand(positionals: string[]): Command {
  const found = COMMANDS.find((candidate) => candidate.words.every((word, i) => positionals[i] === word));
  if (found) return found;
  const group = COMMANDS.filter((candidate) => candidate.words[0] === positionals[0]);
  if (group.length > 0) {
    const given = positionals.slice(0, 2).join(' ');
    throw new UsageError(
      `Unknown command "${given}"; ${positionals[0]} commands: ${group.map((c) => c.words.join(' ')).join(', ')}`,
    );
  }
  throw new UsageError(`Unknown command "${positionals[0]}"`);
}

function checkOptions(command: Command, values: OptionValues): void {
  for (const name of Object.keys(values) as OptionName[]) {
    if (!GLOBAL_OPTIONS.includes(name) && !command.options.includes(name)) {
      throw new UsageError(`--${name} does not apply to ${command.words.join(' ')}`);
    }
  }
}

export function resolveTarget(
  values: OptionValues,
  readLocalStack: () => LocalStackState | undefined,
): AdminTarget {
  if (values.endpoint !== undefined && values.table === undefined) {
    throw new UsageError('--endpoint needs --table NAME (the table in that DynamoDB)');
  }
  if (values.region !== undefined && values.table === undefined) {
    throw new UsageError('--region goes with --table NAME');
  }
  if (values.table !== undefined) {
    if (values.table.trim() === '') throw new UsageError('--table needs a table name');
    if (values.endpoint !== undefined && !/^https?:\/\/\S+$/.test(values.endpoint)) {
      throw new UsageError(`--endpoint "${values.endpoint}" is not a URL like http://127.0.0.1:8000`);
    }
    return {
      tableName: values.table,
      ...(values.endpoint !== undefined && { endpoint: values.endpoint }),
      ...(values.region !== undefined && { region: values.region }),
      source: 'options',
    };
  }
  let state: LocalStackState | undefined;
  try {
    state = readLocalStack();
  } catch {
    // A half-written or corrupt state file: same advice as no file.
    state = undefined;
  }
  if (!state) {
    throw new AdminError(
      'No running local stack found. Start one with `npm start` (in another terminal) and run this again, ' +
        'or target a table: --table NAME [--region R] (deployed), --endpoint URL --table NAME (DynamoDB Local).',
    );
  }
  return {
    tableName: state.tableName,
    endpoint: state.dynamoEndpoint,
    source: 'local-stack',
    ...(state.masterKey && { masterKey: state.masterKey }),
  };
}

const WEBHOOK_SECRET_ENV = KEY_GROUPS.webhook.env;

/**
 * The key that seals webhook secrets, for the commands that make one: the running local stack's master key, or
 * OTP_MASTER_KEY (another DynamoDB Local), or, for a deployed stack, its webhook key secret read from Secrets
 * Manager (--secret-arn, the stack output WebhookKeySecretArn, or OTP_WEBHOOK_SECRET_ARN) with the operator's
 * own AWS credentials. Another of the stack's key secrets is refused: sealing with it would make secrets the
 * webhook sender cannot open.
 */
async function webhookKeyFor(
  target: AdminTarget,
  values: OptionValues,
  env: Record<string, string | undefined>,
): Promise<KeySource> {
  if (target.masterKey) return target.masterKey;
  if (env.OTP_MASTER_KEY) return env.OTP_MASTER_KEY;
  const secretArn = values['secret-arn'] ?? env[WEBHOOK_SECRET_ENV];
  if (!secretArn) {
    throw new AdminError(
      'Sealing a webhook secret needs the webhook key: pass --secret-arn ARN (the stack output ' +
        `WebhookKeySecretArn), or set ${WEBHOOK_SECRET_ENV} or OTP_MASTER_KEY`,
    );
  }
  const client = new SecretsManagerClient(target.region ? { region: target.region } : {});
  try {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
    try {
      return groupKeyRing({ webhook: keySecretRoot('webhook', SecretString, secretArn) });
    } catch (error) {
      throw new AdminError(`${(error as Error).message}: pass the stack output WebhookKeySecretArn`);
    }
  } finally {
    client.destroy();
  }
}

function describeTarget(target: AdminTarget): string {
  if (target.source === 'local-stack') return `the local stack (table ${target.tableName})`;
  if (target.endpoint) return `table ${target.tableName} at ${target.endpoint}`;
  return `table ${target.tableName}${target.region ? ` in ${target.region}` : ''}`;
}

/** AWS and network failures in words an operator can act on. */
function explainAwsError(error: unknown, target: AdminTarget): unknown {
  if (error instanceof UsageError || error instanceof AdminError || !(error instanceof Error)) return error;
  const code = (error as { code?: string }).code;
  const where = describeTarget(target);
  switch (error.name) {
    case 'ResourceNotFoundException':
      return new AdminError(`Table ${target.tableName} not found (${where}); check --table and --region`);
    case 'ConditionalCheckFailedException':
      return new AdminError(`The service no longer exists in ${where}`);
    case 'CredentialsProviderError':
      return new AdminError(
        'No AWS credentials found: configure the default credential chain (AWS_PROFILE, `aws sso login`, ...)',
      );
    case 'UnrecognizedClientException':
    case 'InvalidSignatureException':
    case 'ExpiredTokenException':
    case 'AccessDeniedException':
      return new AdminError(`AWS refused the request (${error.name}): ${error.message}`);
  }
  if (error.message === 'Region is missing' || error.message.startsWith('Region not accepted')) {
    return new AdminError('No valid AWS region: pass --region R or set AWS_REGION');
  }
  if (
    code === 'ECONNREFUSED' ||
    code === 'ENOTFOUND' ||
    code === 'ECONNRESET' ||
    error.name === 'TimeoutError'
  ) {
    return new AdminError(
      target.source === 'local-stack'
        ? `Cannot reach DynamoDB Local at ${target.endpoint}: is \`npm start\` still running? Start it again.`
        : `Cannot reach DynamoDB at ${target.endpoint ?? `the ${target.region ?? 'default'} region`} (${code ?? error.name})`,
    );
  }
  return error;
}

function describeUnknown(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

// --- help -----------------------------------------------------------------------------------------------

const GROUP_ORDER = [...new Set(COMMANDS.map((c) => c.words[0]!))];

function generalHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => [...c.words, ...c.args].join(' ').length));
  const lines = GROUP_ORDER.flatMap((group) => [
    '',
    ...COMMANDS.filter((c) => c.words[0] === group).map(
      (c) => `  ${[...c.words, ...c.args].join(' ').padEnd(width)}  ${c.summary}`,
    ),
  ]);
  return [
    'Usage: npm run admin -- <command> [arguments] [--json] [--table NAME [--region R] | --endpoint URL --table NAME]',
    '',
    'Manage services, API keys, balance, templates, delivery rules, prices, channels and webhook endpoints.',
    'VA = a Service SID, HX = a template SID, WH = a webhook endpoint SID, CC = an ISO 3166-1 alpha-2 country,',
    'amounts in USD (up to 4 decimals).',
    ...lines,
    '',
    '  help [command]  Usage and examples of a command (or: <command> --help)',
    '',
    '--json prints one JSON value on stdout (amounts as USD strings with 4 decimals).',
    TARGET_USAGE,
    'Exit codes: 0 done, 1 could not be done (e.g. no such service), 2 wrong command line.',
  ].join('\n');
}

function commandHelp(command: Command): string {
  return [
    `Usage: ${usageLine(command)} [--json] [target options]`,
    '',
    command.summary,
    ...(command.details ?? []),
    '',
    'Examples:',
    ...command.examples.map((example) => `  npm run admin -- ${example}`),
  ].join('\n');
}

/** `help`, `help key`, `help key revoke`. */
function helpText(topic: string[]): string {
  if (topic.length === 0) return generalHelp();
  const matches = COMMANDS.filter((c) => topic.every((word, i) => c.words[i] === word));
  if (matches.length === 0) throw new UsageError(`No command "${topic.join(' ')}"`);
  return matches.map(commandHelp).join('\n\n');
}

function helpJson(topic: readonly string[]) {
  const matches = COMMANDS.filter((c) => topic.every((word, i) => c.words[i] === word));
  if (matches.length === 0) throw new UsageError(`No command "${topic.join(' ')}"`);
  return {
    commands: matches.map((c) => ({
      command: c.words.join(' '),
      usage: usageLine(c),
      summary: c.summary,
      examples: c.examples.map((example) => `npm run admin -- ${example}`),
    })),
  };
}
