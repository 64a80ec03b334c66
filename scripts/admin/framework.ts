/**
 * The admin command's framework: the options, what a command is, the parsing of a command line, help, `--json`
 * and exit codes. The commands are in `./commands/` (one file a group); `./cli.ts` gives them their table.
 *
 * Exit codes: 0 done, 1 the command could not be carried out (no such service, DynamoDB unreachable...),
 * 2 the command line is wrong. Errors are one clear line on stderr, never a stack trace
 * (`OTP_ADMIN_DEBUG=1` prints it for unexpected errors).
 */
import { parseArgs } from 'node:util';
import type { Accounts } from '../../functions/core/accounts/accounts';
import type { ChangeContext } from '../../functions/core/accounts/ports';
import { isOtpError } from '../../functions/core/errors';
import type { DynamoGuardAdmin } from '../../functions/adapters/dynamodb/guard';
import type { DynamoWebhookEndpoints } from '../../functions/adapters/dynamodb/webhooks';
import type { WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';

/** Every option any command takes; `parseArgs` needs them all to tell option values from positionals. */
const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  endpoint: { type: 'string' },
  table: { type: 'string' },
  region: { type: 'string' },
  name: { type: 'string' },
  balance: { type: 'string' },
  channels: { type: 'string' },
  template: { type: 'string' },
  'no-default-template': { type: 'boolean' },
  'no-key': { type: 'boolean' },
  default: { type: 'boolean' },
  locale: { type: 'string' },
  'secret-arn': { type: 'string' },
  now: { type: 'boolean' },
  'hourly-sends': { type: 'string' },
  'daily-sends': { type: 'string' },
  'hourly-spend': { type: 'string' },
  'daily-spend': { type: 'string' },
  stack: { type: 'string' },
  to: { type: 'string', multiple: true },
  key: { type: 'string' },
} as const;

export type OptionName = keyof typeof OPTIONS;
export type OptionValues = {
  [K in OptionName]?: (typeof OPTIONS)[K] extends { multiple: true }
    ? string[]
    : (typeof OPTIONS)[K]['type'] extends 'string'
      ? string
      : boolean;
};

/** Options every command accepts. */
const GLOBAL_OPTIONS: readonly OptionName[] = ['json', 'help', 'endpoint', 'table', 'region'];

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** The command line is wrong: exit code 2, and the usage of the command is worth showing. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A well-formed command that cannot be carried out (no such service, key, template): exit code 1. */
export class AdminError extends Error {
  override readonly name = 'AdminError';
}

export interface AdminIo {
  /** The command's output: one call per run, without the trailing newline. */
  out(text: string): void;
  /** Error messages and, after a usage error, the usage. */
  err(text: string): void;
}

export interface CommandContext {
  /** The accounts core: the same rules as the console's, and an audit record for every change. */
  accounts: Accounts;
  /** Who runs the command (`cli:<principal>`), for the audit records. */
  change: ChangeContext;
  /** The pumping guard's settings, blocks and report (`guard` commands). */
  guard: DynamoGuardAdmin;
  webhooks: DynamoWebhookEndpoints;
  /** Seals webhook secrets; needs the deployment's master key, so it is loaded only by the commands that make one. */
  webhookVault: () => Promise<WebhookSecretVault>;
  /** Where the command ran, for messages: "table otp-local at http://127.0.0.1:8000". */
  targetDescription: string;
  /**
   * Invokes the deliver function with an event and answers its result (`providers check`): the deployed stack's
   * (`--stack`) through Lambda, or the running local stack's. Absent where neither is the target.
   */
  invokeDeliver?: (event: unknown) => Promise<unknown>;
}

export interface CommandOutput {
  /** What `--json` prints: one JSON value. */
  json: unknown;
  /** What a person reads. */
  text: string;
  /** The exit code when not 0: a check that ran and found failures (EXIT.failed). */
  exitCode?: number;
}

/** A command whose arguments have been checked: it does its work in a context. */
export type Work = (context: CommandContext) => Promise<CommandOutput>;

export interface Command {
  words: readonly string[];
  /** Positional arguments after the words, e.g. `<VA>`. */
  args: readonly string[];
  /** Options of this command besides the global ones, as shown in the usage line. */
  optionsUsage?: string;
  options: readonly OptionName[];
  summary: string;
  /** Longer notes for `help <command>`. */
  details?: readonly string[];
  examples: readonly string[];
  /** Validates the arguments; the returned function does the work. */
  prepare(args: string[], values: OptionValues): Work;
}

interface CommandSpec<Input> extends Omit<Command, 'prepare' | 'options'> {
  options?: readonly OptionName[];
  /** No I/O: a bad command line fails before anything is read or written. */
  parse(args: string[], values: OptionValues): Input;
  run(context: CommandContext, input: Input): Promise<CommandOutput>;
}

export function command<Input>(spec: CommandSpec<Input>): Command {
  const { parse: parseInput, run, ...meta } = spec;
  return {
    ...meta,
    options: spec.options ?? [],
    prepare: (args, values) => {
      const input = parseInput(args, values);
      return (context) => run(context, input);
    },
  };
}

const usageLine = (command: Command): string =>
  [
    'npm run admin --',
    ...command.words,
    ...command.args,
    ...(command.optionsUsage ? [command.optionsUsage] : []),
  ].join(' ');

/**
 * Runs one command line: help, or the command's checks and then `execute` (which gives the work its context),
 * printing the output as text or `--json` and turning errors into the exit code.
 */
export async function runCommandLine(
  commands: readonly Command[],
  argv: string[],
  io: AdminIo,
  env: Record<string, string | undefined>,
  execute: (work: Work, values: OptionValues) => Promise<CommandOutput>,
): Promise<number> {
  let command: Command | undefined;
  try {
    const { values, positionals } = parseCommandLine(argv);

    if (positionals.length === 0 || positionals[0] === 'help') {
      const topic = positionals.slice(1);
      if (positionals.length === 0 && !values.help) {
        io.err(generalHelp(commands));
        return EXIT.usage;
      }
      io.out(values.json ? JSON.stringify(helpJson(commands, topic)) : helpText(commands, topic));
      return EXIT.ok;
    }

    command = findCommand(commands, positionals);
    if (values.help) {
      io.out(values.json ? JSON.stringify(helpJson(commands, command.words)) : commandHelp(command));
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
    const output = await execute(command.prepare(args, values), values);
    io.out(values.json ? JSON.stringify(output.json) : output.text);
    return output.exitCode ?? EXIT.ok;
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
    // The accounts core's refusals: a value the service's own rules refuse, or a thing that is not there.
    if (isOtpError(error)) {
      io.err(`admin: ${error.message}`);
      return error.code === 'invalid_parameter' ? EXIT.usage : EXIT.failed;
    }
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
function findCommand(commands: readonly Command[], positionals: string[]): Command {
  const found = commands.find((candidate) => candidate.words.every((word, i) => positionals[i] === word));
  if (found) return found;
  const group = commands.filter((candidate) => candidate.words[0] === positionals[0]);
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

function describeUnknown(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

// --- help -----------------------------------------------------------------------------------------------

const TARGET_USAGE =
  'Target: the running `npm start` by default; --table NAME [--region R] for a deployed table (default AWS ' +
  'credentials; the stack output TableName); --endpoint URL --table NAME for any DynamoDB Local.';

function generalHelp(commands: readonly Command[]): string {
  const groups = [...new Set(commands.map((c) => c.words[0]!))];
  const width = Math.max(...commands.map((c) => [...c.words, ...c.args].join(' ').length));
  const lines = groups.flatMap((group) => [
    '',
    ...commands
      .filter((c) => c.words[0] === group)
      .map((c) => `  ${[...c.words, ...c.args].join(' ').padEnd(width)}  ${c.summary}`),
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

/** The commands a help topic names: all for `help`, a group for `help key`, one for `help key revoke`. */
function helpTopic(commands: readonly Command[], topic: readonly string[]): Command[] {
  const matches = commands.filter((c) => topic.every((word, i) => c.words[i] === word));
  if (matches.length === 0) throw new UsageError(`No command "${topic.join(' ')}"`);
  return matches;
}

function helpText(commands: readonly Command[], topic: string[]): string {
  if (topic.length === 0) return generalHelp(commands);
  return helpTopic(commands, topic).map(commandHelp).join('\n\n');
}

function helpJson(commands: readonly Command[], topic: readonly string[]) {
  return {
    commands: helpTopic(commands, topic).map((c) => ({
      command: c.words.join(' '),
      usage: usageLine(c),
      summary: c.summary,
      examples: c.examples.map((example) => `npm run admin -- ${example}`),
    })),
  };
}
