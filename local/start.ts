/**
 * `npm start`: the whole service on loopback. DynamoDB Local, the table, a seeded demo account, the API on
 * PORT, the local state machine runner and the simulated carrier. Ctrl-C stops everything it started.
 *
 *   npm start                      in-memory data, human-readable banner
 *   npm start -- --json            one JSON line {"baseUrl","serviceSid","apiKey"} once ready
 *   npm start -- --persist DIR     keep data (and the demo account) in DIR between runs
 *   npm start -- --providers       the real provider adapters against the local provider simulator
 *                                  (also OTP_LOCAL_PROVIDERS=1): aws-sms for sms and rcs, aws-whatsapp, vonage for
 *                                  viber, sna on the simulated carrier (local/provider-simulator.ts)
 *   OTP_GUARD_CONSUMER=off npm start
 *                                  without the pumping guard's stream consumer (local/guard.ts): only the
 *                                  high-risk list blocks, not the rules (sequential numbers, surges, novelty)
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/client';
import { dynamoAccounts } from '../functions/wiring/accounts';
import { startDynamoLocal } from './dynamodb-local';
import type { SimulatorRequest } from './provider-simulator';
import { guardConsumerFromEnv } from './guard';
import { DEMO_CONSOLE_USER, seedDemoAccount, type DemoAccount } from './seed';
import { LOCAL_STACK_STATE_FILE, startLocalStack, writeLocalStackState } from './stack';
import { createTable } from './table';

export const LOCAL_TABLE_NAME = 'otp-local';

/** What has started so far, stopped in reverse on Ctrl-C and on a start that fails half-way. */
const stopAll: (() => Promise<void>)[] = [];

async function stopEverything(): Promise<void> {
  for (const stop of stopAll.splice(0).reverse()) await stop().catch(() => undefined);
}

async function main(): Promise<void> {
  // The AWS SDK warns on Node 20 that it will need Node 22 from 2027; Lambda runs Node 22.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      persist: { type: 'string' },
      port: { type: 'string' },
      providers: { type: 'boolean', default: false },
    },
  });
  const port = Number(values.port ?? process.env.PORT ?? 3000);
  const persistDir = values.persist ? resolve(values.persist) : undefined;
  const say = (text: string) => {
    if (!values.json) process.stderr.write(`${text}\n`);
  };

  say('Starting DynamoDB Local...');
  const dynamo = await startDynamoLocal(persistDir ? { persistDir: join(persistDir, 'dynamodb') } : {});
  stopAll.push(() => dynamo.stop());
  const shutdown = async () => {
    await stopEverything();
    process.exit(0);
  };
  // Signal handlers return nothing: the shutdown's promise is deliberately not awaited (it ends the process).
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());

  const raw = createDynamoClient({ endpoint: dynamo.endpoint });
  await createTable(raw, LOCAL_TABLE_NAME);
  const documents = createDocumentClient({ endpoint: dynamo.endpoint });

  const masterKey = persistDir ? persistedMasterKey(persistDir) : randomBytes(32).toString('base64url');
  const account = await demoAccount(documents, persistDir, masterKey);

  const stack = await startLocalStack({
    dynamoEndpoint: dynamo.endpoint,
    tableName: LOCAL_TABLE_NAME,
    masterKey,
    port,
    // The simulator's refusals (a request outside AWS's model or the synthesized grants) on stderr: the channel
    // falls through to the next, as on AWS, and this says why.
    ...((values.providers || process.env.OTP_LOCAL_PROVIDERS === '1') && {
      providerSimulator: {
        onRefusal: (refusal: SimulatorRequest) =>
          console.error(
            `provider simulator: ${refusal.provider} answered ${refusal.status} ${refusal.errorType}: ${refusal.errorMessage}`,
          ),
      },
    }),
    // As on AWS, the guard's rules act (its consumer reads the table's stream every second).
    guardConsumer: guardConsumerFromEnv(process.env),
    // Request logs go to stderr so that `--json` leaves stdout to the one ready line.
    logger: {
      log: (level, msg, fields) => process.stderr.write(`${JSON.stringify({ level, msg, ...fields })}\n`),
    },
  });
  stopAll.push(() => stack.close());
  // `npm run admin` finds the running local stack through this file.
  writeLocalStackState({
    baseUrl: stack.url,
    dynamoEndpoint: dynamo.endpoint,
    tableName: LOCAL_TABLE_NAME,
    masterKey,
  });
  stopAll.push(async () => rmSync(LOCAL_STACK_STATE_FILE, { force: true }));

  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ baseUrl: stack.url, serviceSid: account.serviceSid, apiKey: account.apiKey })}\n`,
    );
  } else {
    say(`
OTP service running (local stack)
  Base URL     ${stack.url}
  Service SID  ${account.serviceSid}
  API key      ${account.apiKey}
  DynamoDB     ${dynamo.endpoint} (table ${LOCAL_TABLE_NAME}${persistDir ? `, data in ${persistDir}` : ', in memory'})
  Messages     ${stack.url}/_local/messages?to=%2B14155550100
  Console      ${stack.url}/console (local sign-in, loopback only: ${DEMO_CONSOLE_USER})
  Providers    ${stack.providerSimulator ? `simulated real adapters at ${stack.providerSimulator.url}: sms, rcs aws-sms; whatsapp aws-whatsapp; viber vonage (France: sms, whatsapp, rcs vonage too); sna carrier${stack.providerSimulator.checksModels ? '' : '\n               AWS requests checked by IAM only: no AWS service models here (test/fixtures/aws-models/README.md)'}` : 'simulated carrier (http-carrier) on every channel; --providers for the real adapters'}
  Guard        ${stack.guard ? `rules on (level standard), about a second after each send; OTP_GUARD_CONSUMER=off for the high-risk list only` : 'high-risk list only (OTP_GUARD_CONSUMER=off)'}
  Webhooks     npm run admin -- webhook add ${account.serviceSid} ${stack.url}/_local/webhooks/receiver
               then ${stack.url}/_local/webhooks

Ctrl-C stops everything.`);
  }
}

function persistedMasterKey(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'master.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

async function demoAccount(
  documents: ReturnType<typeof createDocumentClient>,
  persistDir: string | undefined,
  masterKey: string,
): Promise<DemoAccount> {
  const file = persistDir && join(persistDir, 'demo-account.json');
  if (file && existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as DemoAccount;
    const accounts = dynamoAccounts(documents, LOCAL_TABLE_NAME);
    if (await accounts.getService(saved.serviceSid)) return saved;
  }
  const account = await seedDemoAccount(documents, LOCAL_TABLE_NAME, masterKey);
  if (file) writeFileSync(file, JSON.stringify(account), { mode: 0o600 });
  return account;
}

main().catch(async (error: unknown) => {
  process.stderr.write(`npm start failed: ${error instanceof Error ? error.message : String(error)}\n`);
  // A start that fails half-way (the port taken, say) leaves no Java behind it.
  await stopEverything();
  process.exit(1);
});
