/**
 * Part 2: latency of send, check (right and wrong code) and fetch, in-process through the middy handlers,
 * one call at a time, with the time each call spent inside DynamoDB calls (from the meter) and, in the same
 * loop, the raw round trip of each request kind the handlers make, issued directly with items of the same
 * shape. The ratio handler / DynamoDB time is what the target is about: it holds on a slow or noisy machine.
 *
 * Also times the delivery tasks and the receipt handler (their Lambda durations, for the cost model).
 */
import { GetCommand, BatchGetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { createDocumentClient } from '../functions/adapters/dynamodb/client';
import { keys } from '../functions/adapters/dynamodb/keys';
import { afterReceiptWait, deliverOverChannel } from '../functions/core/delivery';
import type { HttpResponse } from '../functions/http/response';
import { CHANNELS } from '../functions/core/routing';
import { deriveKey } from '../functions/adapters/crypto';
import { SIGNATURE_HEADER, signPayload } from '../functions/adapters/providers/signature';
import { checkEvent, fetchEvent, lambdaContext, receiptEvent, sendEvent, type Caller } from './events';
import { AUTH, DynamoMeter, diffTotals, type Totals } from './meter';
import { LOCAL_CARRIER_PATH, type BenchService } from './service';
import { NumberSource, type BenchDb } from './setup';
import { distribution, median, percentile, round, type Distribution } from './stats';

const RAW_KINDS = ['GetItem', 'UpdateItem', 'BatchGetItem', 'TransactWriteItems'] as const;
type RawKind = (typeof RAW_KINDS)[number];

interface OperationLatency {
  operation: string;
  /** Whole handler call (what Lambda bills), ms. */
  handler: Distribution;
  /** Time inside DynamoDB calls during the handler call, ms. */
  dynamo: Distribution;
  /** handler - dynamo per call: middy, validation, crypto, mapping, logging. */
  overhead: Distribution;
  /** DynamoDB requests per call, by kind (`auth:` = the API-key middleware's). */
  requestsPerCall: Record<string, number>;
  /** p50(handler) / p50(time in DynamoDB): the target's figure. */
  ratioP50: number;
  /** Median over calls of handler / DynamoDB time of that call. */
  ratioPerCallMedian: number;
  /** Sum over the call's requests of the raw round-trip p50 of their kind. */
  rawDynamoP50: number;
  /** p50(handler) / rawDynamoP50. */
  ratioToRaw: number;
}

interface RawLatency {
  kind: RawKind;
  /** Issued directly, outside any handler. */
  raw: Distribution;
  /** The same kind issued by the handlers (the operation's own requests, auth's excluded). */
  inHandlers?: Distribution;
}

interface TaskLatency {
  task: string;
  duration: Distribution;
  dynamo: Distribution;
  /**
   * Time inside the carrier's API call (the deliver task's): the simulated carrier answers over loopback in this
   * same process, so its own work is not the function's. The cost model prices an assumed carrier call instead.
   */
  carrier?: Distribution;
}

/** Wall time spent in `fetch` calls to the simulated carrier, summed, while installed. */
function carrierMeter() {
  const original = globalThis.fetch;
  const meter = { busyMs: 0, uninstall: () => void (globalThis.fetch = original) };
  globalThis.fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.includes(LOCAL_CARRIER_PATH)) return original(input, init);
    const started = performance.now();
    try {
      const response = await original(input, init);
      // The body is read by the provider after this resolves: read it here, inside the timed span.
      const body = await response.arrayBuffer();
      return new Response(body, { status: response.status, headers: response.headers });
    } finally {
      meter.busyMs += performance.now() - started;
    }
  };
  return meter;
}

export interface LatencyResults {
  iterations: number;
  warmup: number;
  operations: OperationLatency[];
  raw: RawLatency[];
  tasks: TaskLatency[];
}

interface Sample {
  handler: number;
  dynamo: number;
  totals: Totals;
}

const OPERATIONS = ['send', 'check, right code', 'check, wrong code', 'fetch'] as const;
type Operation = (typeof OPERATIONS)[number];

const EXPECTED: Record<Operation, number> = {
  send: 201,
  'check, right code': 200,
  'check, wrong code': 422,
  fetch: 200,
};

export async function measureLatency(
  db: BenchDb,
  service: BenchService,
  caller: Caller,
  numbers: NumberSource,
  options: { iterations: number; warmup: number; taskIterations: number; deadline: number },
): Promise<LatencyResults> {
  const meter = service.meters.api;
  const api = service.quietApi;
  const samples = new Map<Operation, Sample[]>(OPERATIONS.map((operation) => [operation, []]));

  const rawMeter = new DynamoMeter('raw');
  const rawClient = rawMeter.attach(createDocumentClient({ endpoint: db.endpoint }));
  const rawSamples = new Map<RawKind, number[]>(RAW_KINDS.map((kind) => [kind, []]));

  const timed = async (operation: Operation, call: () => Promise<HttpResponse>, keep: boolean) => {
    const before = meter.snapshot();
    const busy = meter.busyMs;
    const started = performance.now();
    const response = await call();
    const handler = performance.now() - started;
    if (response.statusCode !== EXPECTED[operation]) {
      throw new Error(`${operation} answered ${response.statusCode}: ${response.body.slice(0, 200)}`);
    }
    if (keep) {
      samples
        .get(operation)!
        .push({ handler, dynamo: meter.busyMs - busy, totals: diffTotals(meter.snapshot(), before) });
    }
    return response;
  };

  // Items for the raw requests, shaped like the handlers' own: a real verification item under new keys.
  const template = await firstVerificationItem(db, service, caller, numbers);
  const rawBalanceKey = { pk: `BENCHRAW#${randomUUID()}`, sk: 'SERVICE' };
  await rawClient.send(
    new UpdateCommand({
      TableName: db.tableName,
      Key: rawBalanceKey,
      UpdateExpression: 'SET balance = :big',
      ExpressionAttributeValues: { ':big': 1_000_000_000_000 },
    }),
  );
  const rawRound = async (keep: boolean) => {
    const time = async (kind: RawKind, call: () => Promise<unknown>) => {
      const busy = rawMeter.busyMs;
      await call();
      if (keep) rawSamples.get(kind)!.push(rawMeter.busyMs - busy);
    };
    const now = new Date();
    const sid = `VE${randomUUID().replaceAll('-', '')}`;
    const number = numbers.take();
    await time('TransactWriteItems', () =>
      rawClient.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: db.tableName,
                Key: rawBalanceKey,
                UpdateExpression: 'SET balance = balance - :price',
                ConditionExpression: 'attribute_exists(pk) AND balance >= :price',
                ExpressionAttributeValues: { ':price': 600 },
              },
            },
            {
              Put: {
                TableName: db.tableName,
                Item: { ...template, ...keys.verification(sid), sid },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
            {
              Put: {
                TableName: db.tableName,
                Item: {
                  ...keys.charge('VABENCHRAW', now, sid),
                  type: 'charge',
                  verification_sid: sid,
                  amount: 600,
                },
              },
            },
            {
              Update: {
                TableName: db.tableName,
                Key: keys.number(number),
                UpdateExpression: 'SET sends = :sends, version = :next, #ttl = :ttl',
                ConditionExpression: 'attribute_not_exists(version)',
                ExpressionAttributeNames: { '#ttl': 'ttl' },
                ExpressionAttributeValues: { ':sends': [now.getTime()], ':next': 1, ':ttl': 0 },
              },
            },
          ],
        }),
      ),
    );
    await time('BatchGetItem', () =>
      rawClient.send(
        new BatchGetCommand({
          RequestItems: {
            [db.tableName]: { Keys: [rawBalanceKey, keys.number(numbers.take())], ConsistentRead: true },
          },
        }),
      ),
    );
    await time('GetItem', () =>
      rawClient.send(new GetCommand({ TableName: db.tableName, Key: keys.verification(sid) })),
    );
    await time('UpdateItem', () =>
      rawClient.send(
        new UpdateCommand({
          TableName: db.tableName,
          Key: { pk: `RATE#bench#${now.toISOString().slice(0, 16)}`, sk: 'RATE' },
          UpdateExpression: 'ADD #count :one SET #ttl = :ttl',
          ConditionExpression: 'attribute_not_exists(#count) OR #count < :limit',
          ExpressionAttributeNames: { '#count': 'count', '#ttl': 'ttl' },
          ExpressionAttributeValues: { ':one': 1, ':limit': 1_000_000_000, ':ttl': 0 },
        }),
      ),
    );
  };

  const wrong = (code: string) => (code === '000000' ? '111111' : '000000');
  let iterations = 0;
  try {
    meter.keepSamples = true;
    for (let i = 0; i < options.warmup + options.iterations; i++) {
      const keep = i >= options.warmup;
      if (keep && i % 100 === 0 && Date.now() > options.deadline) break;
      const sent = await timed(
        'send',
        () => api.send(sendEvent(caller, numbers.take()), lambdaContext('send')),
        keep,
      );
      const sid = (JSON.parse(sent.body) as { sid: string }).sid;
      const code = service.random.codeOf(sid);
      service.random.forget(sid);
      await timed('fetch', () => api.fetch(fetchEvent(caller, sid), lambdaContext('fetch')), keep);
      await timed(
        'check, wrong code',
        () => api.check(checkEvent(caller, sid, wrong(code)), lambdaContext('check')),
        keep,
      );
      await timed(
        'check, right code',
        () => api.check(checkEvent(caller, sid, code), lambdaContext('check')),
        keep,
      );
      await rawRound(keep);
      if (keep) iterations++;
    }
  } finally {
    meter.keepSamples = false;
    rawClient.destroy();
  }

  const raw: RawLatency[] = RAW_KINDS.map((kind) => {
    const inHandlers = meter.samples.get(kind);
    return {
      kind,
      raw: distribution(rawSamples.get(kind)!),
      ...(inHandlers && inHandlers.length > 0 && { inHandlers: distribution(inHandlers) }),
    };
  });
  const rawP50 = Object.fromEntries(raw.map((entry) => [entry.kind, entry.raw.p50]));
  meter.samples.clear();

  const operations = OPERATIONS.map((operation): OperationLatency => {
    const list = samples.get(operation)!;
    const handler = list.map((sample) => sample.handler);
    const dynamo = list.map((sample) => sample.dynamo);
    const requestsPerCall: Record<string, number> = {};
    for (const sample of list) {
      for (const [kind, totals] of Object.entries(sample.totals)) {
        requestsPerCall[kind] = (requestsPerCall[kind] ?? 0) + totals.calls / list.length;
      }
    }
    const rawDynamoP50 = Object.entries(requestsPerCall).reduce(
      (total, [kind, calls]) => total + calls * (rawP50[kind.replace(AUTH, '')] ?? 0),
      0,
    );
    return {
      operation,
      handler: distribution(handler),
      dynamo: distribution(dynamo),
      overhead: distribution(list.map((sample) => sample.handler - sample.dynamo)),
      requestsPerCall: Object.fromEntries(
        Object.entries(requestsPerCall).map(([kind, n]) => [kind, round(n)]),
      ),
      ratioP50: round(percentile(handler, 50) / percentile(dynamo, 50)),
      ratioPerCallMedian: round(median(list.map((sample) => sample.handler / sample.dynamo))),
      rawDynamoP50: round(rawDynamoP50),
      ratioToRaw: round(percentile(handler, 50) / rawDynamoP50),
    };
  });

  const tasks = await measureTasks(service, caller, options.taskIterations, options.deadline);
  return { iterations, warmup: options.warmup, operations, raw, tasks };
}

async function firstVerificationItem(
  db: BenchDb,
  service: BenchService,
  caller: Caller,
  numbers: NumberSource,
): Promise<Record<string, unknown>> {
  const response = await service.quietApi.send(sendEvent(caller, numbers.take()), lambdaContext('send'));
  const sid = (JSON.parse(response.body) as { sid: string }).sid;
  const { Item } = await db.documents.send(
    new GetCommand({ TableName: db.tableName, Key: keys.verification(sid) }),
  );
  if (!Item) throw new Error('The verification just sent is not in the table');
  return Item;
}

/**
 * The Lambda durations of the delivery side: the deliver task (read, carrier call over loopback HTTP, write),
 * the receipt handler (signature, read, write) and the after-wait task (read), called as Step Functions and
 * the carrier would call them, one verification at a time.
 */
async function measureTasks(
  service: BenchService,
  caller: Caller,
  iterations: number,
  deadline: number,
): Promise<TaskLatency[]> {
  const numbers = new NumberSource(50_000_000);
  // The carrier accepts and stays silent; the bench posts the signed receipt itself, in-process, once the
  // deliver task has returned (a receipt that overtakes the task's own write is not matched: docs/bench.md).
  service.carrier.setRule({
    prefix: '+44745',
    channels: Object.fromEntries(CHANNELS.map((channel) => [channel, 'silent'])),
  });
  const receiptSecret = deriveKey(service.masterKey, 'receipt:carrier');
  const meter = service.meters.tasks;
  const receiptMeter = service.meters.receipts;
  const durations = { deliver: [] as number[], afterWait: [] as number[], receipt: [] as number[] };
  const dynamo = { deliver: [] as number[], afterWait: [] as number[], receipt: [] as number[] };
  const carrierMs: number[] = [];
  const carrier = carrierMeter();
  const waitSeconds = service.taskDeps.settings.channelWaitSeconds;
  try {
    for (let i = 0; i < iterations + 20; i++) {
      if (i % 50 === 0 && Date.now() > deadline) break;
      const keep = i >= 20;
      const to = numbers.take();
      const sent = await service.quietApi.send(sendEvent(caller, to), lambdaContext('send'));
      const sid = (JSON.parse(sent.body) as { sid: string }).sid;
      service.random.forget(sid);

      let busy = meter.busyMs;
      const carrierBusy = carrier.busyMs;
      let started = performance.now();
      const delivered = await deliverOverChannel(service.taskDeps, { sid, channelIndex: 0, waitSeconds });
      if (keep) {
        durations.deliver.push(performance.now() - started);
        dynamo.deliver.push(meter.busyMs - busy);
        carrierMs.push(carrier.busyMs - carrierBusy);
      }
      if (delivered.next !== 'wait') throw new Error(`deliver task answered ${delivered.next}`);

      const message = service.carrier.messagesTo(to)[0];
      if (!message?.messageId) throw new Error('The carrier carried no message');
      const body = JSON.stringify({
        reference: message.reference,
        messageId: message.messageId,
        status: 'delivered',
      });
      const receiptBusy = receiptMeter.busyMs;
      started = performance.now();
      const answer = await service.receipt(
        receiptEvent(body, signPayload(receiptSecret, body, new Date()), SIGNATURE_HEADER),
        lambdaContext('receipt'),
      );
      if (keep) {
        durations.receipt.push(performance.now() - started);
        dynamo.receipt.push(receiptMeter.busyMs - receiptBusy);
      }
      if (answer.statusCode !== 200) throw new Error(`receipt answered ${answer.statusCode}`);

      busy = meter.busyMs;
      started = performance.now();
      const after = await afterReceiptWait(service.taskDeps, delivered);
      if (keep) {
        durations.afterWait.push(performance.now() - started);
        dynamo.afterWait.push(meter.busyMs - busy);
      }
      if (after.deliveryStatus !== 'DELIVERED')
        throw new Error(`after-wait task saw ${after.deliveryStatus}`);
    }
  } finally {
    carrier.uninstall();
    service.carrier.clearRules();
  }
  return [
    {
      task: 'deliver (task)',
      duration: distribution(durations.deliver),
      dynamo: distribution(dynamo.deliver),
      carrier: distribution(carrierMs),
    },
    {
      task: 'receipt handler',
      duration: distribution(durations.receipt),
      dynamo: distribution(dynamo.receipt),
    },
    {
      task: 'after-wait (task)',
      duration: distribution(durations.afterWait),
      dynamo: distribution(dynamo.afterWait),
    },
  ];
}
