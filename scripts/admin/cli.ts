/**
 * `npm run admin -- <command>`: the target (the running local stack or a table named by options), the
 * context the commands work in, and AWS errors in words an operator can act on. Parsing, help, output and exit
 * codes are in `./framework.ts`; the commands are in `./commands/`.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { hostname, userInfo } from 'node:os';
import { DynamoGuardAdmin } from '../../functions/adapters/dynamodb/guard';
import { DynamoWebhookEndpoints } from '../../functions/adapters/dynamodb/webhooks';
import { WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import {
  KEY_GROUPS,
  deferredKeyRing,
  groupKeyRing,
  keySecretRoot,
  toKeyRing,
  type KeyRing,
} from '../../functions/adapters/keyring';
import { readLocalStackState, type LocalStackState } from '../../local/stack';
import { COMMANDS } from './commands';
import {
  AdminError,
  UsageError,
  runCommandLine,
  type AdminIo,
  type CommandContext,
  type OptionValues,
} from './framework';
import { deployedDeliverInvoker, localDeliverInvoker } from './deliver-function';

export interface AdminOptions {
  /** Finds the running `npm start`; tests replace it. */
  readLocalStack?: () => LocalStackState | undefined;
  /** For `OTP_ADMIN_DEBUG`; defaults to this process's environment. */
  env?: Record<string, string | undefined>;
  /** Invokes a deployed stack's deliver function (`--stack`); tests replace it. */
  deployedDeliverInvoker?: typeof deployedDeliverInvoker;
}

interface AdminTarget {
  tableName: string;
  endpoint?: string;
  region?: string;
  /** How the table was found, for messages. */
  source: 'local-stack' | 'options';
  /** The running local stack's master key (for sealing webhook secrets). */
  masterKey?: string;
  /** The running local stack's URL (its deliver function's local invoke). */
  baseUrl?: string;
}

export function runAdmin(argv: string[], io: AdminIo, options: AdminOptions = {}): Promise<number> {
  const env = options.env ?? process.env;
  return runCommandLine(COMMANDS, argv, io, env, async (work, values) => {
    // A deployed stack's deliver function (`providers check`): no table is read.
    if (values.stack !== undefined) {
      if (values.table !== undefined || values.endpoint !== undefined)
        throw new UsageError('--stack targets a deployed stack: no --table or --endpoint with it');
      if (!/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(values.stack))
        throw new UsageError(`--stack "${values.stack}" is not a CloudFormation stack name`);
      const deliver = (options.deployedDeliverInvoker ?? deployedDeliverInvoker)(values.stack, values.region);
      try {
        return await work({
          ...tableLess(),
          invokeDeliver: deliver.invoke,
          targetDescription: `stack ${values.stack}${values.region ? ` in ${values.region}` : ''}`,
        }).catch((error: unknown) => {
          throw explainLambdaError(error);
        });
      } finally {
        deliver.destroy();
      }
    }
    const target = resolveTarget(values, options.readLocalStack ?? readLocalStackState);
    const client = createDocumentClient({
      ...(target.endpoint && { endpoint: target.endpoint }),
      ...(target.region && { region: target.region }),
    });
    try {
      // Read at the first key a command issues, with the operator's own credentials.
      const apiKeyTag = deferredKeyRing(() => deploymentKeyFor('apiKeyTag', target, values, env), {
        eager: false,
      });
      const accounts = dynamoAccounts(client, target.tableName, { apiKeyTag });
      const change = { actor: `cli:${await principal(client, target)}` };
      const webhooks = new DynamoWebhookEndpoints(client, target.tableName);
      const guard = new DynamoGuardAdmin(client, target.tableName);
      const webhookVault = async () =>
        new WebhookSecretVault(await deploymentKeyFor('webhook', target, values, env));
      return await work({
        accounts,
        change,
        webhooks,
        guard,
        webhookVault,
        targetDescription: describeTarget(target),
        ...(target.baseUrl && { invokeDeliver: localDeliverInvoker(target.baseUrl) }),
      }).catch((error: unknown) => {
        throw explainAwsError(error, target);
      });
    } finally {
      client.destroy();
    }
  });
}

function resolveTarget(values: OptionValues, readLocalStack: () => LocalStackState | undefined): AdminTarget {
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
    baseUrl: state.baseUrl,
    ...(state.masterKey && { masterKey: state.masterKey }),
  };
}

/** What a command does with each deployment key, and the stack output that names its secret. */
const DEPLOYMENT_KEYS = {
  webhook: { use: 'Sealing a webhook secret', key: 'the webhook key', output: 'WebhookKeySecretArn' },
  apiKeyTag: { use: 'Issuing an API key', key: "the API keys' tag key", output: 'ApiKeyTagSecretArn' },
} as const;

/**
 * A deployment key for the commands that need one (sealing a webhook secret, tagging a new API key): the running
 * local stack's master key, or OTP_MASTER_KEY (another DynamoDB Local), or, for a deployed stack, the group's key
 * secret read from Secrets Manager (--secret-arn, the stack output, or the group's environment variable) with the
 * operator's own AWS credentials. Another of the stack's key secrets is refused: a webhook secret sealed with it
 * could not be opened, a key tagged with it would be refused.
 */
async function deploymentKeyFor(
  group: keyof typeof DEPLOYMENT_KEYS,
  target: AdminTarget,
  values: OptionValues,
  env: Record<string, string | undefined>,
): Promise<KeyRing> {
  if (target.masterKey) return toKeyRing(target.masterKey);
  if (env.OTP_MASTER_KEY) return toKeyRing(env.OTP_MASTER_KEY);
  const { use, key, output } = DEPLOYMENT_KEYS[group];
  const variable = KEY_GROUPS[group].env;
  const secretArn = values['secret-arn'] ?? env[variable];
  if (!secretArn) {
    throw new AdminError(
      `${use} needs ${key}: pass --secret-arn ARN (the stack output ${output}), or set ${variable} or OTP_MASTER_KEY`,
    );
  }
  const client = new SecretsManagerClient(target.region ? { region: target.region } : {});
  try {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
    try {
      return groupKeyRing({ [group]: keySecretRoot(group, SecretString, secretArn) });
    } catch (error) {
      throw new AdminError(`${(error as Error).message}: pass the stack output ${output}`);
    }
  } finally {
    client.destroy();
  }
}

/**
 * The stores of a context with no table (`--stack`): only `providers check` takes `--stack`, and it reads none;
 * any other use is a bug, said plainly.
 */
/**
 * Who runs a command, for the audit records: the operating-system user and host, and on AWS the access key id
 * of the credentials (CloudTrail names the IAM principal behind it).
 */
async function principal(
  client: ReturnType<typeof createDocumentClient>,
  target: AdminTarget,
): Promise<string> {
  const person = `${userInfo().username}@${hostname()}`;
  if (target.endpoint) return person;
  try {
    const credentials = await client.config.credentials();
    return `${person} aws:${credentials.accessKeyId}`;
  } catch {
    return person;
  }
}

function tableLess(): Pick<CommandContext, 'accounts' | 'change' | 'guard' | 'webhooks' | 'webhookVault'> {
  const none = <T extends object>(): T =>
    new Proxy({} as T, {
      get: () => {
        throw new AdminError('This command needs a table: --stack targets the deliver function only');
      },
    });
  return {
    accounts: none(),
    change: { actor: 'cli' },
    guard: none(),
    webhooks: none(),
    webhookVault: () => Promise.reject(new AdminError('--stack targets the deliver function only')),
  };
}

/** Lambda's refusals in words an operator can act on. */
function explainLambdaError(error: unknown): unknown {
  if (error instanceof UsageError || error instanceof AdminError || !(error instanceof Error)) return error;
  switch (error.name) {
    case 'CredentialsProviderError':
      return new AdminError(
        'No AWS credentials found: configure the default credential chain (AWS_PROFILE, `aws sso login`, ...)',
      );
    case 'AccessDeniedException':
    case 'ResourceNotFoundException':
    case 'UnrecognizedClientException':
    case 'ExpiredTokenException':
      return new AdminError(`AWS refused the request (${error.name}): ${error.message}`);
  }
  if (error.message === 'Region is missing')
    return new AdminError('No AWS region: pass --region R or set AWS_REGION');
  return error;
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
