/**
 * The capacity of one service: a sample of verifications through the real handlers, delivery tasks, receipt
 * handler and sweeper on DynamoDB Local (each request's items and units from the meters, bench/meter.ts), then
 * replayed at a given rate on a virtual clock and read by the model (bench/capacity-model.ts).
 *
 * A verification here: a send, its delivery on the first channel (tasks, receipt, status reads), a fetch, the
 * right check, a second fetch, and the sweeper's two looks at it. The replay places each step at an offset
 * from its send (STEP_OFFSETS_MS) and spreads the sample's requests of a step evenly over the sends, copy after
 * copy of the sample; the items of one verification (its SID, its number, its ledger line, any item it created)
 * are renamed per copy, the others (the service item, guard state) stay shared. The API key's own item is
 * spread over the fewest keys the per-key limit allows, verification after verification. Virtual time wraps at
 * `seconds`, so every second is a steady state with every step's load in it.
 */
import { keys } from '../functions/adapters/dynamodb/keys';
import { channelsFor } from './counts';
import { checkEvent, fetchEvent, lambdaContext, sendEvent, type Caller } from './events';
import {
  analyseCapacity,
  apiKeysFor,
  markAppends,
  spreadApiKeys,
  type CapacityModel,
  type ModelAccess,
  type TimedRequest,
} from './capacity-model';
import type { RequestTrace } from './meter';
import type { BenchService } from './service';
import { NumberSource } from './setup';

/** Where each step's requests fall after the send, ms: the meter that made them, or the phase of the sample. */
const STEP_OFFSETS_MS: Record<string, number> = {
  'send/api': 0,
  // The deliver task right after the send; AfterWait at the end of the 8 s wait when no receipt came.
  'delivery/tasks': 200,
  'delivery/receipts': 3_000,
  'delivery/polls': 4_000,
  'fetch/api': 5_000,
  'check/api': 20_000,
  'fetch again/api': 21_000,
  // The sweeper's restart half looks at sends 30 s old, its settle half at 6 min.
  'restart/sweeper': 31_000,
  'settle/sweeper': 361_000,
};

/**
 * A transaction's time on AWS, in which another write of one of its items conflicts. AWS publishes no figure:
 * a TransactWriteItems is a two-phase commit over several single-item writes of a few ms each, so 25 ms is taken
 * (`--capacity-window-ms` to try others).
 */
export const DEFAULT_TRANSACTION_WINDOW_MS = 25;

/** What the replay leaves out (docs/bench.md says why). */
const NOT_INCLUDED = [
  "the guard's stream consumer",
  'webhooks',
  "the sweeper's per-run requests",
  'repeated numbers and idempotency keys',
];

export interface CapacityPlan {
  /** Verifications run through the service. */
  sample: number;
  /** Sends a second the sample is replayed at. */
  rate: number;
  /** Virtual seconds replayed (the steady state wraps at this period). */
  seconds: number;
  windowMs: number;
  /** Each API key's limit over all endpoints (the default setting unless said). */
  keyRequestsPerMinute: number;
  /** The shards the sampled service's balance is spread over (`balance shards`; 1: as every service starts). */
  balanceShards: number;
}

export interface CapacityResults extends CapacityModel {
  sample: number;
  balanceShards: number;
  /** The keys the replay spreads the sends over, and the figures that size them. */
  apiKeys: { keys: number; keyRequestsPerVerification: number; keyRequestsPerMinute: number };
  stepOffsetsMs: Record<string, number>;
  notIncluded: string[];
  /** Requests and units of one verification in the sample (a check on the replay: per send, not per second). */
  perVerification: { requests: number; wcu: number; rcu: number };
}

interface SampleRequest extends RequestTrace {
  step: string;
  items: ModelAccess[];
}

export async function measureCapacity(
  service: BenchService,
  caller: Caller,
  plan: CapacityPlan,
): Promise<CapacityResults> {
  const sample = await recordSample(service, caller, plan.sample);
  // Every API request writes its key's item once (the per-key limit's count).
  const keyRequests = sample.requests.filter((request) =>
    request.items.some((access) => isKeyItem(access) && access.wcu > 0),
  ).length;
  const keyRequestsPerVerification = keyRequests / plan.sample;
  const apiKeys = apiKeysFor(plan.rate, keyRequestsPerVerification, plan.keyRequestsPerMinute);
  const trace = spreadApiKeys(replay(sample.requests, sample.own, plan), apiKeys, isKeyItem);
  const model = analyseCapacity(trace, plan);
  const total = (field: 'wcu' | 'rcu') =>
    sample.requests.reduce((sum, request) => sum + request.items.reduce((s, item) => s + item[field], 0), 0);
  const round = (value: number) => Math.round(value * 100) / 100;
  return {
    ...model,
    sample: plan.sample,
    balanceShards: plan.balanceShards,
    apiKeys: {
      keys: apiKeys,
      keyRequestsPerVerification: Math.round(keyRequestsPerVerification * 100) / 100,
      keyRequestsPerMinute: plan.keyRequestsPerMinute,
    },
    stepOffsetsMs: STEP_OFFSETS_MS,
    notIncluded: NOT_INCLUDED,
    perVerification: {
      requests: round(sample.requests.length / plan.sample),
      wcu: round(total('wcu') / plan.sample),
      rcu: round(total('rcu') / plan.sample),
    },
  };
}

/** An API key's own item, not the service's pointer to it (which lives in the service's partition). */
const isKeyItem = (access: ModelAccess) => access.pk.startsWith(keys.apiKey('').pk);

/** The sample's numbers: a range of their own, so a carrier rule by prefix delivers them on the first channel. */
const SAMPLE_NUMBERS_FROM = 30_000_000;
const SAMPLE_PREFIX = '+447430';

/**
 * The meters of a delivery (its tasks, receipt callbacks and status reads): a delivery runs beside the sends after
 * its own, so its requests are the delivery step's whatever phase the sample is in.
 */
const DELIVERY_METERS = new Set(['tasks', 'receipts', 'polls']);

/** The sample's requests, each under its step; throws when a request fits no step (it would be lost). */
export async function recordSample(service: BenchService, caller: Caller, count: number) {
  const requests: SampleRequest[] = [];
  const unplaced = new Set<string>();
  let phase = 'send';
  const meters = Object.values(service.meters);
  for (const meter of meters) {
    meter.onRequest = (request) => {
      const step = DELIVERY_METERS.has(request.meter)
        ? `delivery/${request.meter}`
        : `${phase}/${request.meter}`;
      if (STEP_OFFSETS_MS[step] === undefined) unplaced.add(step);
      else requests.push({ ...request, step });
    };
  }
  const numbers = new NumberSource(SAMPLE_NUMBERS_FROM);
  const recipients = Array.from({ length: count }, () => numbers.take());
  const first = channelsFor(recipients[0]!)[0]!;
  service.carrier.setRule({ prefix: SAMPLE_PREFIX, channels: { [first]: { deliver: 100 } } });
  const sids: string[] = [];
  try {
    const from = new Date();
    for (const to of recipients) {
      const response = await service.api.send(sendEvent(caller, to), lambdaContext('send'));
      if (response.statusCode !== 201)
        throw new Error(`capacity sample: send answered ${response.statusCode}`);
      sids.push((JSON.parse(response.body) as { sid: string }).sid);
    }
    const through = new Date();
    phase = 'delivery';
    await service.workflow.idle();
    // A receipt posted just before an execution ended may still be in flight.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const run = async (
      name: string,
      call: (sid: string) => Promise<{ statusCode: number }>,
      expected: number,
    ) => {
      phase = name;
      for (const sid of sids) {
        const { statusCode } = await call(sid);
        if (statusCode !== expected) throw new Error(`capacity sample: ${name} answered ${statusCode}`);
      }
    };
    const api = service.quietApi;
    await run('fetch', (sid) => api.fetch(fetchEvent(caller, sid), lambdaContext('fetch')), 200);
    await run(
      'check',
      (sid) => api.check(checkEvent(caller, sid, service.random.codeOf(sid)), lambdaContext('check')),
      200,
    );
    await run('fetch again', (sid) => api.fetch(fetchEvent(caller, sid), lambdaContext('fetch')), 200);
    await service.setSweepCursor(new Date(from.getTime() - 1));
    phase = 'restart';
    await service.sweep(new Date(through.getTime() + 31_000));
    phase = 'settle';
    await service.sweep(new Date(through.getTime() + 361_000));
  } finally {
    phase = 'done';
    for (const meter of meters) meter.onRequest = undefined;
    service.carrier.clearRules();
  }
  if (unplaced.size > 0) throw new Error(`capacity sample: requests of no step: ${[...unplaced].join(', ')}`);
  // One verification's own keys: those naming its SID or number, and the items the sample created.
  const tokens = [...sids, ...recipients];
  const ownKey = (value: string) => tokens.some((token) => value.includes(token));
  const created = new Set(
    requests.flatMap((request) =>
      request.items.filter((item) => item.created).map((item) => item.pk + item.sk),
    ),
  );
  const own = (item: ModelAccess) => ownKey(item.pk) || ownKey(item.sk) || created.has(item.pk + item.sk);
  // The sweeper's requests that touch no verification are per run, not per send.
  const kept = requests.filter((request) => request.meter !== 'sweeper' || request.items.some(own));
  markAppends(kept);
  return { requests: kept, own };
}

/** The sample, copy after copy, at `rate` sends a second; its own keys renamed per copy; time wrapped at `seconds`. */
function replay(
  sample: SampleRequest[],
  own: (item: ModelAccess) => boolean,
  plan: CapacityPlan,
): TimedRequest[] {
  const periodMs = plan.seconds * 1000;
  const verifications = plan.rate * plan.seconds;
  const copies = Math.ceil(verifications / plan.sample);
  const steps = new Map<string, SampleRequest[]>();
  for (const request of sample) steps.set(request.step, [...(steps.get(request.step) ?? []), request]);
  const trace: TimedRequest[] = [];
  for (let copy = 0; copy < copies; copy++) {
    for (const [step, requests] of steps) {
      const offset = STEP_OFFSETS_MS[step]!;
      requests.forEach((request, n) => {
        // The n-th of the step's requests falls at the send of the verification at that share of the sample.
        const position = copy * plan.sample + ((n + 0.5) * plan.sample) / requests.length;
        if (position >= verifications) return;
        const at = ((((position / plan.rate) * 1000 + offset) % periodMs) + periodMs) % periodMs;
        trace.push({
          at,
          transactional: request.transactional,
          verification: Math.floor(position),
          accepting: step === 'send/api' && request.transactional,
          items: request.items.map((item) => (own(item) ? { ...renamed(item, copy), own: true } : item)),
        });
      });
    }
  }
  return trace;
}

/** A copy's own key: the partition renamed when it is the verification's, else the sort key (a ledger line). */
function renamed(item: ModelAccess, copy: number): ModelAccess {
  const sharedPartition = item.pk.startsWith(keys.service('').pk);
  return sharedPartition ? { ...item, sk: `${item.sk}~${copy}` } : { ...item, pk: `${item.pk}~${copy}` };
}
