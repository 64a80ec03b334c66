/**
 * The service as the bench runs it: the API handlers, the delivery tasks (run by the local state machine
 * runner from the same ASL file) and the receipt handler, each over its own metered store, and the
 * simulated carrier behind a loopback HTTP server that also serves the receipt callback route. It is the
 * local stack (local/stack.ts) with meters; the HTTP throughput part uses the local stack itself.
 */
import type { Server } from 'node:http';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { deriveKey } from '../functions/adapters/crypto';
import { keys } from '../functions/adapters/dynamodb/keys';
import { DynamoStore } from '../functions/adapters/dynamodb/store';
import { buildApi, buildReceiptHandler, type ApiHandler } from '../functions/http/api';
import type { Settings } from '../functions/core/settings';
import { sweepDeliveries, type SweepResult } from '../functions/core/sweeper';
import type { Deps } from '../functions/runtime';
import { CHANNELS } from '../functions/core/routing';
import { NO_PROVIDERS } from '../functions/wiring/store-deps';
import { SimulatedCarrier } from '../local/carrier';
import { startHttpServer, type LocalRoute, type Route } from '../local/server';
import { LocalWorkflow } from '../local/workflow';
import { DynamoMeter } from './meter';
import { ROUTES } from './events';
import {
  RecordingWorkflow,
  RememberingRandom,
  benchDeps,
  discardingLogger,
  meteredStore,
  type BenchDb,
} from './setup';

/** Where the simulated carrier answers, on the bench's own HTTP server. */
export const LOCAL_CARRIER_PATH = '/_local/carrier';

export interface BenchService {
  masterKey: string;
  /**
   * `polls`: the state machine's own status reads (Step Functions' DynamoDB GetItem, no Lambda); `sweeper`: the
   * sweeper's runs (`sweep`).
   */
  meters: {
    api: DynamoMeter;
    tasks: DynamoMeter;
    receipts: DynamoMeter;
    polls: DynamoMeter;
    sweeper: DynamoMeter;
  };
  random: RememberingRandom;
  carrier: SimulatedCarrier;
  /** Runs deliveries with the same ASL and task functions as AWS. */
  workflow: LocalWorkflow;
  recording: RecordingWorkflow;
  /** Handlers whose sends start the real (local) workflow. */
  api: ReturnType<typeof buildApi>;
  /** Handlers whose sends only record the start: no delivery traffic during latency runs. */
  quietApi: ReturnType<typeof buildApi>;
  /** New quiet handlers, as a cold function builds them: an API-key guard that knows no key. */
  coldQuietApi(): ReturnType<typeof buildApi>;
  taskDeps: Deps;
  /** The receipt handler (metered by `meters.receipts`, timed into `receiptDurations`). */
  receipt: ApiHandler;
  /**
   * One run of the real sweeper (core/sweeper.ts `sweepDeliveries`) over its own metered store, with its clock
   * at `now`, wired as functions/entries/sweeper.ts wires it (no provider); the deliveries it restarts are only
   * recorded (`sweeperStarts`), not run.
   */
  sweep(now: Date): Promise<SweepResult>;
  /** The sweeper's workflow: it records the restarts. */
  sweeperStarts: RecordingWorkflow;
  /** Puts the sweeper's cursor (unmetered): both halves have looked up to `through`, nothing deferred. */
  setSweepCursor(through: Date): Promise<void>;
  /** Services in the directory the sweeper lists (unmetered). */
  countServices(): Promise<number>;
  /** Durations of receipt handler calls, in arrival order. */
  receiptDurations: number[];
  logger: ReturnType<typeof discardingLogger>;
  close(): Promise<void>;
}

export interface BenchServiceOptions {
  settings: Partial<Settings>;
  /** Price every write and read by DynamoDB's rules (slower: reads items before and after each write). */
  modelCapacity: boolean;
}

const messageSchema = z.object({
  channel: z.enum(CHANNELS),
  to: z.string(),
  body: z.string(),
  reference: z.string(),
});

export async function startBenchService(db: BenchDb, options: BenchServiceOptions): Promise<BenchService> {
  const masterKey = db.masterKey;
  const probe = options.modelCapacity ? db.documents : undefined;
  const meters = {
    api: new DynamoMeter('api', probe),
    tasks: new DynamoMeter('tasks', probe),
    receipts: new DynamoMeter('receipts', probe),
    polls: new DynamoMeter('polls', probe),
    sweeper: new DynamoMeter('sweeper', probe),
  };
  const stores = {
    api: meteredStore(db, meters.api),
    tasks: meteredStore(db, meters.tasks),
    receipts: meteredStore(db, meters.receipts),
    polls: meteredStore(db, meters.polls),
    sweeper: meteredStore(db, meters.sweeper),
  };

  let routes: { api: Route[]; local: LocalRoute[] } = { api: [], local: [] };
  const { server, url } = await startHttpServer(0, () => routes);
  const carrier = new SimulatedCarrier({
    receiptUrl: () => `${url}/v2/Callbacks/carrier`,
    receiptSecret: deriveKey(masterKey, 'receipt:carrier'),
    token: deriveKey(masterKey, 'carrier-token').toString('base64url'),
  });
  const logger = discardingLogger();
  const random = new RememberingRandom();
  const recording = new RecordingWorkflow();
  const common = {
    db,
    masterKey,
    settings: options.settings,
    carrierUrl: `${url}${LOCAL_CARRIER_PATH}`,
    random,
    logger,
  };
  const depsWith = (store: DynamoStore, workflow: Deps['workflow']) =>
    benchDeps({ ...common, store, workflow });

  const taskDeps = depsWith(stores.tasks.store, recording);
  const workflow = new LocalWorkflow(taskDeps, logger, {
    client: stores.polls.client,
    tableName: db.tableName,
  });
  const api = buildApi(depsWith(stores.api.store, workflow));
  const quietDeps = depsWith(stores.api.store, recording);
  const quietApi = buildApi(quietDeps);
  const receiptHandler = buildReceiptHandler(depsWith(stores.receipts.store, recording));
  const sweeperStarts = new RecordingWorkflow();
  const sweeperDeps = { ...depsWith(stores.sweeper.store, sweeperStarts), providers: NO_PROVIDERS };
  const sweep = (now: Date) => sweepDeliveries({ ...sweeperDeps, clock: { now: () => now } });
  const unmetered = new DynamoStore(db.documents, db.tableName);
  const setSweepCursor = async (through: Date) => {
    const seen = await unmetered.getSweepCursor();
    const at = through.toISOString();
    const next = {
      restartedThrough: at,
      settledThrough: at,
      deferred: {},
      version: (seen?.version ?? 0) + 1,
    };
    if (!(await unmetered.saveSweepCursor(next, seen))) throw new Error('The sweeper cursor moved meanwhile');
  };
  const countServices = async () => {
    const { Count } = await db.documents.send(
      new QueryCommand({
        TableName: db.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.serviceDirectory('').pk },
        Select: 'COUNT',
      }),
    );
    return Count ?? 0;
  };
  const receiptDurations: number[] = [];
  const timedReceipts: ApiHandler = async (event, context) => {
    const started = performance.now();
    try {
      return await receiptHandler(event, context);
    } finally {
      receiptDurations.push(performance.now() - started);
    }
  };

  routes = {
    api: [{ method: 'POST', path: ROUTES.receipt, handler: timedReceipts }],
    local: [
      {
        method: 'POST',
        path: `${LOCAL_CARRIER_PATH}/messages`,
        handle: ({ headers, body }) => {
          if (!carrier.isAuthorized(headers.authorization))
            return { status: 401, body: { error: 'unauthorized' } };
          let json: unknown;
          try {
            json = JSON.parse(body);
          } catch {
            return { status: 400, body: { error: 'bad message' } };
          }
          const message = messageSchema.safeParse(json);
          if (!message.success) return { status: 400, body: { error: 'bad message' } };
          return { status: 200, body: carrier.accept(message.data) };
        },
      },
    ],
  };

  return {
    masterKey,
    meters,
    random,
    carrier,
    workflow,
    recording,
    api,
    quietApi,
    coldQuietApi: () => buildApi(quietDeps),
    taskDeps,
    receipt: timedReceipts,
    sweep,
    sweeperStarts,
    setSweepCursor,
    countServices,
    receiptDurations,
    logger,
    close: async () => {
      await workflow.idle();
      await carrier.close();
      await new Promise<void>((resolve) => {
        (server as Server).closeAllConnections();
        server.close(() => resolve());
      });
      for (const store of Object.values(stores)) store.close();
    },
  };
}
