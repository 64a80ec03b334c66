/**
 * The bench's own wiring of the service: DynamoDB Local with the service table, accounts, and the same
 * dependencies the Lambdas build (`buildDeps`), with stores over metered clients. Each side of the service
 * gets its own meter so requests are attributed without guessing: the API handlers, the delivery tasks,
 * the receipt handler.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import type { Accounts } from '../functions/core/accounts/accounts';
import { dynamoAccounts } from '../functions/wiring/accounts';
import { createDocumentClient, createDynamoClient } from '../functions/adapters/dynamodb/client';
import { DynamoStore } from '../functions/adapters/dynamodb/store';
import { cryptoRandom } from '../functions/adapters/crypto';
import { jsonLogger, type Logger } from '../functions/adapters/logger';
import type { DeliveryWorkflow, Random } from '../functions/core/ports';
import { UNITS_PER_USD } from '../functions/core/money';
import { CHANNELS } from '../functions/core/routing';
import { SETTING_ENV, type Settings } from '../functions/core/settings';

/** The bench's own account changes, as the audit trail shows them. */
const BY_BENCH = { actor: 'bench' };
import { buildDeps, type Deps } from '../functions/runtime';
import { startDynamoLocal, type DynamoLocal } from '../local/dynamodb-local';
import { createTable } from '../local/table';
import { DynamoMeter } from './meter';

export interface BenchDb {
  endpoint: string;
  tableName: string;
  /** Unmetered, for setup and the meters' probes. */
  documents: DynamoDBDocumentClient;
  /**
   * The deployment key of everything run over this DynamoDB Local: the accounts tag new API keys with its
   * `api-key-tag` key, so the handlers (built with the same key) accept them.
   */
  masterKey: string;
  accounts: Accounts;
  stop(): Promise<void>;
}

/** A fresh table, named at random, in the DynamoDB Local at `endpoint`. */
async function createBenchTable(endpoint: string): Promise<string> {
  const tableName = `otp-bench-${randomBytes(4).toString('hex')}`;
  // createDynamoClient uses the same local credentials as createDocumentClient: DynamoDB Local keeps one
  // database per access key and region.
  const raw = createDynamoClient({ endpoint });
  try {
    await createTable(raw, tableName);
  } finally {
    raw.destroy();
  }
  return tableName;
}

export async function startBenchDb(): Promise<BenchDb & { dynamo: DynamoLocal }> {
  const dynamo = await startDynamoLocal();
  const tableName = await createBenchTable(dynamo.endpoint);
  const documents = createDocumentClient({ endpoint: dynamo.endpoint });
  const masterKey = randomBytes(32).toString('base64url');
  return {
    dynamo,
    endpoint: dynamo.endpoint,
    tableName,
    documents,
    masterKey,
    accounts: dynamoAccounts(documents, tableName, { apiKeyTag: masterKey }),
    stop: async () => {
      documents.destroy();
      await dynamo.stop();
    },
  };
}

/** Another table in the same DynamoDB Local, with its own account store. */
export async function addTable(db: BenchDb): Promise<BenchDb> {
  const tableName = await createBenchTable(db.endpoint);
  return {
    ...db,
    tableName,
    accounts: dynamoAccounts(db.documents, tableName, { apiKeyTag: db.masterKey }),
    stop: async () => undefined,
  };
}

export interface Account {
  serviceSid: string;
  apiKey: string;
}

/** A service with all channels and a default template; the balance in USD, spread over `balanceShards`. */
export async function createAccount(db: BenchDb, balanceUsd: number, balanceShards = 1): Promise<Account> {
  const service = await db.accounts.createService(BY_BENCH, {
    name: 'Bench',
    balance: Math.round(balanceUsd * UNITS_PER_USD),
    channels: [...CHANNELS],
    defaultTemplateBody: 'Your Bench verification code is {code}. It expires in 5 minutes.',
  });
  if (balanceShards > 1) await db.accounts.spreadBalance(BY_BENCH, service.sid, String(balanceShards));
  const { apiKey } = await db.accounts.issueApiKey(BY_BENCH, service.sid);
  return { serviceSid: service.sid, apiKey };
}

/** A metered DynamoStore over its own client. */
export function meteredStore(
  db: BenchDb,
  meter: DynamoMeter,
): { store: DynamoStore; client: DynamoDBDocumentClient; close(): void } {
  const client = meter.attach(createDocumentClient({ endpoint: db.endpoint }));
  return { store: new DynamoStore(client, db.tableName), client, close: () => client.destroy() };
}

/** Settings as the `OTP_*` environment the Lambdas read. */
export function settingsEnv(settings: Partial<Settings>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(settings).map(([name, value]) => [SETTING_ENV[name as keyof Settings], String(value)]),
  );
}

export interface BenchDepsOptions {
  db: BenchDb;
  masterKey: string;
  store: DynamoStore;
  workflow: DeliveryWorkflow;
  settings: Partial<Settings>;
  carrierUrl?: string;
  random?: Random;
  logger?: Logger;
}

/** The Lambdas' dependencies, from the same `buildDeps`, with the bench's store and workflow. */
export function benchDeps(options: BenchDepsOptions): Deps {
  const env = {
    TABLE_NAME: options.db.tableName,
    DYNAMODB_ENDPOINT: options.db.endpoint,
    ...(options.carrierUrl && { OTP_CARRIER_URL: options.carrierUrl }),
    ...settingsEnv(options.settings),
  };
  const base = buildDeps(env, options.masterKey, options.logger ?? discardingLogger());
  return {
    ...base,
    store: options.store,
    workflow: options.workflow,
    ...(options.random && { random: options.random }),
  };
}

/** Formats every line as in production (the work is real) and drops it; counts the bytes for the cost model. */
export function discardingLogger(): Logger & { bytes: number; lines: number } {
  const counter = { bytes: 0, lines: 0 };
  const logger = jsonLogger((line) => {
    counter.bytes += Buffer.byteLength(line) + 1;
    counter.lines++;
  });
  return Object.assign(counter, { log: logger.log });
}

/**
 * Real random codes and SIDs, remembering each verification's code by SID, so the bench can check with
 * the right code without reading the carrier's messages.
 */
export class RememberingRandom implements Random {
  private readonly codes = new Map<string, string>();
  private lastSid: string | undefined;

  sid(prefix: 'VA' | 'VE' | 'HX'): string {
    const sid = cryptoRandom.sid(prefix);
    if (prefix === 'VE') this.lastSid = sid;
    return sid;
  }

  code(): string {
    const code = cryptoRandom.code();
    // newVerification draws the SID, then the code.
    if (this.lastSid) this.codes.set(this.lastSid, code);
    this.lastSid = undefined;
    return code;
  }

  codeOf(sid: string): string {
    const code = this.codes.get(sid);
    if (!code) throw new Error(`No code remembered for ${sid}`);
    return code;
  }

  forget(sid: string): void {
    this.codes.delete(sid);
  }
}

/** A workflow that only records starts: on AWS this is one StartExecution call, not a DynamoDB request. */
export class RecordingWorkflow implements DeliveryWorkflow {
  starts = 0;
  async start(): Promise<void> {
    this.starts++;
  }
}

/** Distinct valid UK mobile numbers (+44 74xx), so per-number limits never refuse a load send. */
export class NumberSource {
  private next: number;
  constructor(start = 0) {
    this.next = start;
  }
  take(): string {
    const n = this.next++;
    if (n >= 100_000_000) throw new Error('NumberSource exhausted');
    return `+4474${String(n).padStart(8, '0')}`;
  }
}
