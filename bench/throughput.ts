/**
 * Part 3: throughput over HTTP on the local stack (local/stack.ts: the same handlers behind the local HTTP
 * server, the local state machine runner, the simulated carrier and the webhook stream poller, all in this
 * process), with autocannon, for send, check and fetch at a few concurrency levels. Limits are raised by
 * the settings; every send goes to a new number anyway, so the per-number log never becomes a hot item.
 * Sends are measured twice: with their deliveries running in-process (as `npm start` does) and with the
 * workflow start switched off (the API alone, as on AWS where deliveries run in other Lambdas).
 */
import autocannon from 'autocannon';
import { createDocumentClient } from '../functions/adapters/dynamodb/client';
import { startLocalStack } from '../local/stack';
import { DynamoMeter } from './meter';
import { ROUTES } from './events';
import {
  RememberingRandom,
  createAccount,
  discardingLogger,
  settingsEnv,
  type BenchDb,
  type NumberSource,
} from './setup';
import { round } from './stats';

interface ThroughputRun {
  operation: string;
  connections: number;
  /** Seconds the run lasted (shorter than asked when its pool of fresh verifications ran out). */
  durationS: number;
  completed: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p97_5: number; p99: number; mean: number };
  /** Answers other than the expected status, and connection errors. */
  unexpected: number;
  errors: number;
  statusCodes: Record<string, number>;
  /** DynamoDB requests the stack made during the run per completed request (deliveries included). */
  dynamoRequestsPerRequest: number;
}

export interface ThroughputResults {
  durationPerRunS: number;
  levels: number[];
  runs: ThroughputRun[];
}

const EXPECTED = {
  send: 201,
  'send, deliveries off': 201,
  'check, right code': 200,
  'check, wrong code': 422,
  fetch: 200,
} as const;
type Operation = keyof typeof EXPECTED;

export async function measureThroughput(
  db: BenchDb,
  numbers: NumberSource,
  options: { levels: number[]; durationS: number; deadline: number },
): Promise<ThroughputResults> {
  const random = new RememberingRandom();
  const meter = new DynamoMeter('throughput');
  const client = meter.attach(createDocumentClient({ endpoint: db.endpoint }));
  // Sends start real (local) deliveries, except in the runs that switch them off to see the API alone.
  let deliveries = true;
  const stack = await startLocalStack({
    dynamoClient: client,
    wrapWorkflow: (workflow) => ({
      start: (input) => (deliveries ? workflow.start(input) : Promise.resolve()),
    }),
    // The stalled-delivery sweeper runs in its own Lambda on AWS; here it would restart the sends of the
    // runs without deliveries in the middle of a later run.
    sweepIntervalMs: 0,
    dynamoEndpoint: db.endpoint,
    tableName: db.tableName,
    masterKey: db.masterKey,
    port: 0,
    env: settingsEnv({
      channelWaitSeconds: 1,
      keyRequestsPerMinute: 1_000_000_000,
      burstLimit: 1_000_000,
      hourlyLimit: 1_000_000,
      maxCheckAttempts: 1_000_000,
    }),
    logger: discardingLogger(),
    override: { random },
  });
  const runs: ThroughputRun[] = [];
  try {
    const caller = await createAccount(db, 1_000_000_000);
    const headers = { 'x-api-key': caller.apiKey, 'content-type': 'application/x-www-form-urlencoded' };
    const path = (route: string, params: Record<string, string> = {}) =>
      route
        .replace('{ServiceSid}', caller.serviceSid)
        .replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));

    /** Verifications the sends created, with their codes, for the checks and fetches. */
    const pool: { sid: string; code: string }[] = [];

    const run = async (
      operation: Operation,
      connections: number,
      request: autocannon.Request,
      max?: number,
    ) => {
      const statusCodes: Record<string, number> = {};
      const calls = meter.calls;
      const result = await autocannon({
        url: stack.url,
        connections,
        duration: options.durationS,
        timeout: 10,
        ...(max !== undefined && { maxOverallRequests: Math.max(connections, max) }),
        requests: [
          {
            ...request,
            onResponse: (status, body, context, responseHeaders) => {
              statusCodes[status] = (statusCodes[status] ?? 0) + 1;
              request.onResponse?.(status, body, context, responseHeaders);
            },
          },
        ],
      });
      const completed = result.requests.total ?? 0;
      const expected = statusCodes[EXPECTED[operation]] ?? 0;
      runs.push({
        operation,
        connections,
        durationS: result.duration,
        completed,
        requestsPerSecond: round(completed / result.duration, 1),
        latencyMs: {
          p50: result.latency.p50,
          p97_5: result.latency.p97_5,
          p99: result.latency.p99,
          mean: round(result.latency.mean ?? result.latency.average, 2),
        },
        unexpected: completed - expected,
        errors: result.errors,
        statusCodes,
        dynamoRequestsPerRequest: round((meter.calls - calls) / Math.max(1, completed), 2),
      });
    };
    const settle = async () => {
      // Deliveries the sends started run on in-process; let them end before the next run (bounded).
      await Promise.race([stack.workflow.idle(), new Promise((resolve) => setTimeout(resolve, 60_000))]);
    };

    const send: autocannon.Request = {
      method: 'POST',
      path: path(ROUTES.send),
      headers,
      setupRequest: (request) => ({ ...request, body: `To=${encodeURIComponent(numbers.take())}` }),
      onResponse: (status, body) => {
        if (status !== 201) return;
        const sid = (JSON.parse(body) as { sid: string }).sid;
        pool.push({ sid, code: random.codeOf(sid) });
      },
    };
    deliveries = false;
    for (const connections of options.levels) {
      if (Date.now() > options.deadline) break;
      await run('send, deliveries off', connections, send);
    }
    deliveries = true;
    for (const connections of options.levels) {
      if (Date.now() > options.deadline) break;
      await run('send', connections, send);
      await settle();
    }
    if (pool.length === 0) throw new Error('No send succeeded: nothing to check or fetch');

    let cursor = 0;
    const next = () => pool[cursor++ % pool.length]!;
    for (const connections of options.levels) {
      if (Date.now() > options.deadline) break;
      await run('fetch', connections, {
        method: 'GET',
        path: path(ROUTES.fetch, { VerificationSid: pool[0]!.sid }),
        headers: { 'x-api-key': caller.apiKey },
        setupRequest: (request) => ({
          ...request,
          path: path(ROUTES.fetch, { VerificationSid: next().sid }),
        }),
      });
    }
    for (const connections of options.levels) {
      if (Date.now() > options.deadline) break;
      await run('check, wrong code', connections, {
        method: 'POST',
        path: path(ROUTES.check),
        headers,
        setupRequest: (request) => {
          const { sid, code } = next();
          return {
            ...request,
            body: `VerificationSid=${sid}&Code=${code === '000000' ? '111111' : '000000'}`,
          };
        },
      });
    }
    // A right code verifies once: each level gets its share of the fresh verifications, so a run can end
    // before its duration when the share is used up (its duration says so).
    const fresh = [...pool];
    const share = Math.floor(fresh.length / options.levels.length);
    for (const connections of options.levels) {
      if (Date.now() > options.deadline) break;
      const mine = fresh.splice(0, share);
      let taken = 0;
      await run(
        'check, right code',
        connections,
        {
          method: 'POST',
          path: path(ROUTES.check),
          headers,
          setupRequest: (request) => {
            // Past the share (requests already in flight at the cap), reuse one: it answers 409 and counts as unexpected.
            const { sid, code } = mine[taken++] ?? mine[0]!;
            return { ...request, body: `VerificationSid=${sid}&Code=${code}` };
          },
        },
        Math.max(0, share - connections),
      );
    }
  } finally {
    await Promise.race([stack.close(), new Promise((resolve) => setTimeout(resolve, 60_000))]);
    client.destroy();
  }
  return { durationPerRunS: options.durationS, levels: options.levels, runs };
}
