/**
 * Integration-test harness: a fresh table in the run's DynamoDB Local, the local stack in-process on a free
 * port, a demo account, and a small HTTP client. Tests talk HTTP to the same handlers that Lambda runs.
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { randomBytes } from 'node:crypto';
import { deriveKey } from '../../functions/adapters/crypto';
import { jsonLogger } from '../../functions/adapters/logger';
import { SIGNATURE_HEADER, signPayload } from '../../functions/adapters/providers/signature';
import type { Accounts } from '../../functions/core/accounts/accounts';
import type { ChangeContext } from '../../functions/core/accounts/ports';
import { UNITS_PER_USD } from '../../functions/core/money';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import type { Metrics } from '../../functions/core/metrics';
import type { DeliveryWorkflow } from '../../functions/core/ports';
import { CHANNELS, type Channel } from '../../functions/core/routing';
import { SETTING_ENV, type Settings } from '../../functions/core/settings';
import type { ChannelBehaviour } from '../../local/carrier';
import {
  startLocalStack,
  type LocalProviderSimulatorOptions,
  type LocalStack,
  type LocalStackOptions,
} from '../../local/stack';
import { recordPoll } from './answer-recorder';
import { FakeClock } from './fake-clock';
import { freshTable } from './table';

export { dynamoEndpoint } from './table';

/** Who the tests' own account changes are recorded as. */
export const BY_TEST: ChangeContext = { actor: 'test' };

export interface Account {
  serviceSid: string;
  apiKey: string;
}

export interface Harness {
  stack: LocalStack;
  clock: FakeClock;
  accounts: Accounts;
  tableName: string;
  masterKey: string;
  /** Every log line the stack wrote. */
  logs: string[];
  createAccount(
    options?: Partial<{ balanceUsd: number; channels: Channel[]; defaultTemplate: string | null }>,
  ): Promise<Account>;
  client(account: Account): ApiClient;
  /**
   * Posts a receipt to `POST /v2/Callbacks/carrier` as the simulated carrier does: its JSON, signed with the
   * stack's receipt key at the present time.
   */
  postCarrierReceipt(receipt: Record<string, unknown>): Promise<Response>;
  /** A console session's token from the local sign-in (loopback only), as `email`, an operator if asked. */
  consoleToken(email: string, operator?: boolean): Promise<string>;
  /** Every item in the table, unmarshalled. */
  scanTable(): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  settings?: Partial<Settings>;
  /** Other environment of the functions, e.g. `OTP_ALLOWED_CHANNELS`. */
  env?: Record<string, string>;
  carrierDefault?: ChannelBehaviour;
  /** Called with the service's DynamoDB client before the stack starts, e.g. to add a fault middleware. */
  decorateDynamoClient?: (client: DynamoDBDocumentClient) => void;
  /** Wraps the delivery workflow that send and the sweeper start, e.g. to make StartExecution fail. */
  wrapWorkflow?: (workflow: DeliveryWorkflow) => DeliveryWorkflow;
  /** Where the handlers and delivery tasks write their metrics (none by default), e.g. the EMF adapter. */
  metrics?: Metrics;
  /** The real provider adapters against the local provider simulator (local/provider-simulator.ts). */
  providerSimulator?: boolean | LocalProviderSimulatorOptions;
  /** Runs the pumping guard's stream consumer on the table's stream (off by default: tests send made-up numbers). */
  guardConsumer?: boolean | { intervalMs: number };
  /** Runs the sweeper on its own timer, as `npm start` does every minute (off by default: tests run it by hand). */
  sweepIntervalMs?: number;
  /** Time-outs imposed on route functions (none by default), e.g. to run a send short of time. */
  functionTimeoutsMs?: LocalStackOptions['functionTimeoutsMs'];
  /** The API's unknown-key guard (the deployed default by default). */
  apiKeyGuard?: LocalStackOptions['apiKeyGuard'];
}

/** The system's time, plus every wait asked for, made at once: pacing still spaces the calls on this clock. */
function unwaitingClock() {
  let waited = 0;
  return {
    now: () => new Date(Date.now() + waited),
    sleep: (ms: number) => {
      waited += Math.max(0, ms);
      return Promise.resolve();
    },
  };
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const table = await freshTable('test');
  const { endpoint, name: tableName, raw, documents } = table;
  // The service's own client, apart from the one the harness reads and seeds with: faults touch only the service.
  const serviceClient = table.client();
  options.decorateDynamoClient?.(serviceClient);
  const clock = new FakeClock();
  const logs: string[] = [];
  const masterKey = randomBytes(32).toString('base64url');
  // Keys issued as the deployment issues them: tagged under the stack's own key.
  const accounts = dynamoAccounts(documents, tableName, { apiKeyTag: masterKey });
  const env: Record<string, string> = { ...options.env };
  // Short receipt waits keep the suite fast; delivery tests set their own.
  const settings: Partial<Settings> = { channelWaitSeconds: 1, ...options.settings };
  for (const [name, value] of Object.entries(settings)) {
    env[SETTING_ENV[name as keyof Settings]] = String(value);
  }
  const stack = await startLocalStack({
    dynamoEndpoint: endpoint,
    tableName,
    masterKey,
    env,
    logger: jsonLogger((line) => logs.push(line)),
    override: { clock, ...(options.metrics && { metrics: options.metrics }) },
    dynamoClient: serviceClient,
    ...(options.wrapWorkflow && { wrapWorkflow: options.wrapWorkflow }),
    // Tests run the sweeper themselves when they need it, unless they ask for its timer.
    sweepIntervalMs: options.sweepIntervalMs ?? 0,
    ...(options.carrierDefault && { carrierDefault: options.carrierDefault }),
    ...(options.providerSimulator && { providerSimulator: options.providerSimulator }),
    ...(options.guardConsumer && { guardConsumer: options.guardConsumer }),
    ...(options.functionTimeoutsMs && { functionTimeoutsMs: options.functionTimeoutsMs }),
    ...(options.apiKeyGuard && { apiKeyGuard: options.apiKeyGuard }),
    providerCheckClock: unwaitingClock(),
  });

  return {
    stack,
    clock,
    accounts,
    tableName,
    masterKey,
    logs,
    async createAccount(account = {}) {
      const service = await accounts.createService(BY_TEST, {
        name: 'Test',
        balance: Math.round((account.balanceUsd ?? 100) * UNITS_PER_USD),
        channels: account.channels ?? [...CHANNELS],
        ...(account.defaultTemplate !== null && {
          defaultTemplateBody: account.defaultTemplate ?? 'Your code is {code}.',
        }),
      });
      const { apiKey } = await accounts.issueApiKey(BY_TEST, service.sid);
      return { serviceSid: service.sid, apiKey };
    },
    client: (account) => new ApiClient(stack.url, account),
    postCarrierReceipt(receipt) {
      const body = JSON.stringify(receipt);
      const signature = signPayload(deriveKey(masterKey, 'receipt:carrier'), body, new Date());
      return fetch(`${stack.url}/v2/Callbacks/carrier`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature },
        body,
      });
    },
    async consoleToken(email, operator = false) {
      const response = await fetch(`${stack.url}/console/local/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, operator }),
      });
      if (response.status !== 200) throw new Error(`local sign-in answered ${response.status}`);
      return ((await response.json()) as { token: string }).token;
    },
    async scanTable() {
      const items: Record<string, unknown>[] = [];
      let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
      do {
        const page = await raw.send(
          new ScanCommand({ TableName: tableName, ExclusiveStartKey: start, ConsistentRead: true }),
        );
        items.push(...(page.Items ?? []).map((item) => unmarshall(item)));
        start = page.LastEvaluatedKey;
      } while (start);
      return items;
    },
    async close() {
      await stack.close();
      table.close();
    },
  };
}

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export type Params = Record<string, string | undefined>;

/** Calls the API as a customer's backend would. Form-encoded by default; `{ json: true }` sends JSON. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly account: Account,
  ) {}

  send(params: Params, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.post(
      `/v2/Services/${options.serviceSid ?? this.account.serviceSid}/Verifications`,
      params,
      options,
    );
  }

  check(params: Params, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.post(
      `/v2/Services/${options.serviceSid ?? this.account.serviceSid}/VerificationCheck`,
      params,
      options,
    );
  }

  fetch(sid: string, options: RequestOptions = {}): Promise<ApiResponse> {
    return this.request(
      'GET',
      `/v2/Services/${options.serviceSid ?? this.account.serviceSid}/Verifications/${sid}`,
      undefined,
      options,
    );
  }

  post(path: string, params: Params, options: RequestOptions = {}): Promise<ApiResponse> {
    const defined = Object.fromEntries(
      Object.entries(params).filter(([, value]) => value !== undefined),
    ) as Record<string, string>;
    const body = options.json ? JSON.stringify(defined) : new URLSearchParams(defined).toString();
    const contentType = options.json ? 'application/json' : 'application/x-www-form-urlencoded';
    return this.request('POST', path, body, {
      ...options,
      headers: { 'content-type': contentType, ...options.headers },
    });
  }

  async request(
    method: string,
    path: string,
    body: string | undefined,
    options: RequestOptions = {},
  ): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.apiKey !== null) headers['x-api-key'] = options.apiKey ?? this.account.apiKey;
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(body !== undefined && { body }),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      headers: response.headers,
    };
  }

  /** Messages the simulated carrier carried to a number, newest first. */
  async messages(
    to: string,
  ): Promise<{ channel: string; body: string; outcome: string; provider: string; time: string }[]> {
    const response = await fetch(`${this.baseUrl}/_local/messages?to=${encodeURIComponent(to)}`);
    return (await response.json()) as {
      channel: string;
      body: string;
      outcome: string;
      provider: string;
      time: string;
    }[];
  }

  /**
   * The messages to a number, newest first, once there are at least `count`: a send answers before its delivery
   * runs, and a loaded machine may take seconds to carry the message (`eventually`'s generous deadline).
   */
  awaitMessages(to: string, count = 1): ReturnType<ApiClient['messages']> {
    return eventually(async () => {
      const messages = await this.messages(to);
      return messages.length >= count ? messages : undefined;
    });
  }

  /** The code in the newest message to a number, once one has been carried. */
  async deliveredCode(to: string): Promise<string> {
    await this.awaitMessages(to);
    return this.latestCode(to);
  }

  /** The code in the newest message to a number. */
  async latestCode(to: string): Promise<string> {
    const [latest] = await this.messages(to);
    const code = latest && /(\d{6})/.exec(latest.body)?.[1];
    if (!code) throw new Error(`No code delivered to ${to}`);
    return code;
  }
}

export interface RequestOptions {
  json?: boolean;
  headers?: Record<string, string>;
  /** Another key; `null` sends none. */
  apiKey?: string | null;
  /** Another service's path. */
  serviceSid?: string;
}

/** Polls until `probe` returns a value, for at most `timeoutMs` (bounded: never an endless loop). */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  // How many probes it takes is timing: the answer recorder keeps the last probe's answers only.
  return recordPoll(async (attempt) => {
    for (;;) {
      const value = await attempt(probe);
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  });
}
