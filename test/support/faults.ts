/**
 * Fault injection for the reliability tests: a DynamoDB client middleware that fails chosen calls, and a
 * workflow wrapper whose StartExecution fails on demand. Production code has no failure flags: the harness
 * hands the service a client with this middleware (`decorateDynamoClient`) and wraps its workflow
 * (`wrapWorkflow`).
 */
import {
  InternalServerError,
  ProvisionedThroughputExceededException,
  ThrottlingException,
  TransactionCanceledException,
  TransactionInProgressException,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DeliveryInput, DeliveryWorkflow } from '../../functions/core/ports';

/**
 * `throttling` and `provisioned`: DynamoDB's two throttling errors (HTTP 400, retryable as throttling);
 * `internal`: InternalServerError (HTTP 500, retryable as transient); `stale`: an eventually consistent read
 * that does not see recent writes yet (answers "no item"); it never applies to a consistent read, exactly as
 * DynamoDB guarantees; `slow`: the call is held `delayMs` before it is sent (a slow write), then succeeds;
 * `conflict`: a TransactWriteItems cancelled because another transaction held an item (`TransactionConflict` on
 * the items `pkPrefix` names, `None` on the others), applied nothing, as DynamoDB answers under contention.
 */
export type FaultKind =
  'throttling' | 'provisioned' | 'internal' | 'stale' | 'slow' | 'in-progress' | 'conflict';

/**
 * `call`: above the SDK's retries, so the call as a whole fails, as when every retry was used up or the
 * time-out hit. `attempt`: one HTTP attempt inside the SDK's retry loop, so the SDK retries it (with the same
 * request, hence the same `ClientRequestToken`).
 */
export type FaultLayer = 'call' | 'attempt';

/** One DynamoDB call the service made (logged once per call, whatever its retries). */
export interface DynamoCall {
  /** `GetItem`, `BatchGetItem`, `UpdateItem`, `TransactWriteItems`, `Query`, ... */
  operation: string;
  /** The partition keys the call names (key, item, each transaction item, each batch key). */
  pks: string[];
  /** The sort keys, in the same order. */
  sks: string[];
  consistent: boolean;
  /** The `UpdateExpression` of an UpdateItem, to tell one write of an item from another. */
  update?: string;
  /** Set when a fault was injected into this call (at either layer). */
  fault?: { kind: FaultKind; timing: FaultTiming; layer: FaultLayer };
}

/** `before`: the request never reaches DynamoDB. `after`: it was applied, but the answer is lost. */
export type FaultTiming = 'before' | 'after';

export interface FaultRule {
  /** Only these operations (e.g. `TransactWriteItems`); every operation when unset. */
  operation?: string | string[];
  /** Only calls naming an item whose partition key starts with this (e.g. `VERIFICATION#`). */
  pkPrefix?: string;
  /** Any other condition. */
  where?: (call: DynamoCall) => boolean;
  /** `conflict` only: the items of the transaction another one held (default: those `pkPrefix` names, or all). */
  conflictOn?: (pk: string, sk: string) => boolean;
  /** Let this many matching calls through before failing. Default 0: the next matching call fails. */
  skip?: number;
  /** How many matching calls to fail, one after the other. Default 1. */
  times?: number;
  kind?: FaultKind;
  /** How long a `slow` call is held. Default 500 ms. */
  delayMs?: number;
  timing?: FaultTiming;
  layer?: FaultLayer;
}

/** A rule in force; `fired` counts the faults it injected. */
export interface Injected {
  readonly fired: number;
  /** The calls it failed. */
  readonly calls: DynamoCall[];
}

interface ActiveRule extends Required<Omit<FaultRule, 'operation' | 'pkPrefix' | 'where' | 'conflictOn'>> {
  conflictOn: (pk: string, sk: string) => boolean;
  matches: (call: DynamoCall) => boolean;
  seen: number;
  fired: number;
  calls: DynamoCall[];
}

type Input = Record<string, unknown>;

export class DynamoFaults {
  /** Every call of the service's client since the last `reset`, in order. */
  readonly calls: DynamoCall[] = [];
  private rules: ActiveRule[] = [];

  /** Fails the calls a rule selects; returns a live view of what it did. */
  inject(rule: FaultRule): Injected {
    const operations = rule.operation === undefined ? undefined : [rule.operation].flat();
    const kind = rule.kind ?? 'throttling';
    const active: ActiveRule = {
      skip: rule.skip ?? 0,
      delayMs: rule.delayMs ?? 500,
      times: rule.times ?? 1,
      kind,
      timing: rule.timing ?? 'before',
      conflictOn: rule.conflictOn ?? ((pk) => rule.pkPrefix === undefined || pk.startsWith(rule.pkPrefix)),
      // Staleness is a property of the answer to one read, not of an attempt.
      layer: kind === 'stale' ? 'call' : (rule.layer ?? 'call'),
      matches: (call) =>
        (operations === undefined || operations.includes(call.operation)) &&
        (rule.pkPrefix === undefined || call.pks.some((pk) => pk.startsWith(rule.pkPrefix!))) &&
        // A consistent read always sees every committed write: it can never be stale.
        (kind !== 'stale' || (isRead(call.operation) && !call.consistent)) &&
        (rule.where?.(call) ?? true),
      seen: 0,
      fired: 0,
      calls: [],
    };
    this.rules.push(active);
    return {
      get fired() {
        return active.fired;
      },
      calls: active.calls,
    };
  }

  /** Removes every rule and forgets the calls. */
  reset(): void {
    this.rules = [];
    this.calls.length = 0;
  }

  /** For `startHarness({ decorateDynamoClient })`: adds the two middlewares to the service's client. */
  readonly install = (client: DynamoDBDocumentClient): void => {
    // Above the retries: sees each call once, with the document (unmarshalled) input.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const call = describeCall(context.commandName, args.input as Input);
        this.calls.push(call);
        const rule = this.take('call', call);
        if (!rule) return next(args);
        if (rule.kind === 'stale') return { output: staleOutput(call.operation), response: {} } as never;
        if (rule.kind === 'slow') {
          await new Promise((resolve) => setTimeout(resolve, rule.delayMs));
          return next(args);
        }
        if (rule.timing === 'after' && rule.kind !== 'conflict') await next(args);
        throw faultError(rule.kind, call, rule.conflictOn);
      },
      { step: 'initialize', priority: 'high', name: 'faultInjectionPerCall' },
    );
    // Inside the retry loop: each HTTP attempt, with the marshalled input.
    const perAttempt =
      (next: (args: { input: object }) => Promise<unknown>, context: { commandName?: string }) =>
      async (args: { input: object }) => {
        const call = describeCall(context.commandName, args.input as Input);
        const rule = this.take('attempt', call);
        if (!rule) return next(args);
        // Mark the logged call (the last one of this operation) as faulted, for assertions.
        const logged = [...this.calls].reverse().find((c) => c.operation === call.operation);
        if (logged) logged.fault = { kind: rule.kind, timing: rule.timing, layer: 'attempt' };
        if (rule.timing === 'after' && rule.kind !== 'conflict') await next(args);
        throw faultError(rule.kind, call, rule.conflictOn);
      };
    client.middlewareStack.addRelativeTo(perAttempt as never, {
      relation: 'after',
      toMiddleware: 'retryMiddleware',
      name: 'faultInjectionPerAttempt',
    });
  };

  private take(layer: FaultLayer, call: DynamoCall): ActiveRule | undefined {
    for (const rule of this.rules) {
      if (rule.layer !== layer || rule.fired >= rule.times || !rule.matches(call)) continue;
      rule.seen += 1;
      if (rule.seen <= rule.skip) continue;
      rule.fired += 1;
      rule.calls.push(call);
      if (layer === 'call') call.fault = { kind: rule.kind, timing: rule.timing, layer };
      return rule;
    }
    return undefined;
  }
}

const isRead = (operation: string): boolean =>
  ['GetItem', 'BatchGetItem', 'Query', 'Scan'].includes(operation);

/** The answer of a read that does not see the item yet. */
function staleOutput(operation: string): Record<string, unknown> {
  const $metadata = { httpStatusCode: 200 };
  if (operation === 'BatchGetItem') return { Responses: {}, UnprocessedKeys: {}, $metadata };
  if (operation === 'Query' || operation === 'Scan') return { Items: [], Count: 0, $metadata };
  return { $metadata };
}

function faultError(
  kind: FaultKind,
  call: DynamoCall,
  conflictOn: (pk: string, sk: string) => boolean,
): Error {
  const message = `Injected fault (${kind})`;
  switch (kind) {
    case 'conflict':
      return new TransactionCanceledException({
        message: `Transaction cancelled (injected): [${call.pks.map(() => 'TransactionConflict').join(', ')}]`,
        $metadata: { httpStatusCode: 400 },
        // A transaction's items in order, one key each: the conflict is on the items the rule names.
        CancellationReasons: call.pks.map((pk, i) =>
          conflictOn(pk, call.sks[i]!)
            ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }
            : { Code: 'None' },
        ),
      });
    case 'throttling':
      return new ThrottlingException({ message, $metadata: { httpStatusCode: 400 } });
    case 'provisioned':
      return new ProvisionedThroughputExceededException({ message, $metadata: { httpStatusCode: 400 } });
    case 'in-progress':
      return new TransactionInProgressException({ message, $metadata: { httpStatusCode: 400 } });
    case 'internal':
    case 'stale':
    case 'slow':
      return new InternalServerError({ message, $metadata: { httpStatusCode: 500 } });
  }
}

/** The operation and the partition keys of a call, from document or marshalled input alike. */
function describeCall(commandName: string | undefined, input: Input): DynamoCall {
  const pks: string[] = [];
  const sks: string[] = [];
  const text = (attribute: unknown) =>
    typeof attribute === 'string' ? attribute : (attribute as { S?: unknown } | undefined)?.S;
  const add = (key: unknown) => {
    const pk = text((key as { pk?: unknown } | undefined)?.pk);
    if (typeof pk !== 'string') return;
    pks.push(pk);
    sks.push(String(text((key as { sk?: unknown }).sk)));
  };
  add(input.Key);
  add(input.Item);
  for (const entry of (input.TransactItems as Record<string, Input>[] | undefined) ?? []) {
    for (const operation of Object.values(entry)) {
      add(operation.Key);
      add(operation.Item);
    }
  }
  const requestItems = (input.RequestItems as Record<string, { Keys?: unknown[] }> | undefined) ?? {};
  for (const table of Object.values(requestItems)) for (const key of table.Keys ?? []) add(key);
  const consistent =
    input.ConsistentRead === true ||
    Object.values(requestItems).some((table) => (table as Input).ConsistentRead === true);
  return {
    operation: (commandName ?? 'Unknown').replace(/Command$/, ''),
    pks,
    sks,
    consistent,
    ...(typeof input.UpdateExpression === 'string' && { update: input.UpdateExpression }),
  };
}

/** A workflow whose `start` (StartExecution) fails on demand, around the real one. */
export class FlakyWorkflow implements DeliveryWorkflow {
  /** Every start asked for, failed or not. */
  readonly starts: DeliveryInput[] = [];
  readonly failed: DeliveryInput[] = [];
  private remaining = 0;
  private predicate: ((input: DeliveryInput) => boolean) | undefined;

  constructor(private readonly inner: DeliveryWorkflow) {}

  /** The next `count` starts fail (only those `where` selects, when given). */
  failNext(count = 1, where?: (input: DeliveryInput) => boolean): void {
    this.remaining = count;
    this.predicate = where;
  }

  /** Forgets the starts and stops failing. */
  reset(): void {
    this.starts.length = 0;
    this.failed.length = 0;
    this.remaining = 0;
  }

  async start(input: DeliveryInput): Promise<void> {
    this.starts.push(input);
    if (this.remaining > 0 && (this.predicate?.(input) ?? true)) {
      this.remaining -= 1;
      this.failed.push(input);
      // What StartExecution answers when Step Functions throttles or is unavailable.
      const error = new Error('Injected StartExecution failure');
      error.name = 'ServiceUnavailable';
      throw error;
    }
    await this.inner.start(input);
  }
}
