/**
 * The delivery state machine on the local stack: the same ASL file as on AWS, run in-process by
 * `aws-local-stepfunctions`, with its Task states handled by the same task functions the Lambdas run, and its
 * status read (Step Functions' own DynamoDB GetItem on AWS) by the same GetItem against DynamoDB Local.
 */
import { GetItemCommand, type DynamoDBClient, type GetItemCommandInput } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { StateMachine } from 'aws-local-stepfunctions';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  afterWaitOrSettle,
  deliverOverChannel,
  type DeliveryDeps,
  type DeliveryTaskInput,
  type DeliveryTaskOutput,
} from '../functions/core/delivery';
import type { DeliveryInput, DeliveryWorkflow } from '../functions/core/ports';
import type { Logger } from '../functions/adapters/logger';
import { verificationKeySubstitutions } from '../lib/delivery-definition';

// aws-local-stepfunctions 3 calls Promise.withResolvers (Node 22+); give Node 20 the standard one.
if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
      return { promise, resolve, reject };
    },
  });
}

export const ASL_PATH = join(__dirname, '..', 'statemachine', 'delivery.asl.json');

/** The ASL with its substitutions filled, as CDK's `definitionSubstitutions` would. */
export function loadDefinition(substitutions: Record<string, string>): unknown {
  const text = readFileSync(ASL_PATH, 'utf8').replace(/\$\{(\w+)\}/g, (_, name: string) => {
    const value = substitutions[name];
    if (value === undefined) throw new Error(`No substitution for \${${name}}`);
    return value;
  });
  return JSON.parse(text);
}

type Task = (deps: DeliveryDeps, input: DeliveryTaskInput) => Promise<DeliveryTaskOutput>;

/** The table the state machine's status read goes to, as the state machine's role reaches it on AWS. */
export interface WorkflowTable {
  client: DynamoDBDocumentClient | DynamoDBClient;
  tableName: string;
}

/** One status read of the state machine: its partition key, when it answered, the status it saw. */
export interface StatusRead {
  pk: string;
  at: number;
  deliveryStatus?: string;
}

/** One execution, wall-clock times (ms). */
export interface ExecutionRecord {
  sid: string;
  startedAt: number;
  endedAt?: number;
}

export class LocalWorkflow implements DeliveryWorkflow {
  private readonly machine: StateMachine;
  private readonly running = new Set<Promise<unknown>>();
  /** Every task invocation, for tests that count transitions or duplicate runs. */
  readonly taskLog: { state: string; input: DeliveryTaskInput; output: DeliveryTaskOutput }[] = [];
  /** Every status read (the ReadDeliveryStatus state), for tests and the bench. */
  readonly readLog: StatusRead[] = [];
  /** Every execution's start and end, for timing tests. */
  readonly executions: ExecutionRecord[] = [];

  constructor(
    private readonly deps: DeliveryDeps,
    private readonly logger: Logger,
    private readonly table: WorkflowTable,
  ) {
    this.machine = new StateMachine(
      loadDefinition({
        DeliverFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:otp-deliver',
        AfterWaitFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:otp-after-wait',
        TableName: table.tableName,
        ...verificationKeySubstitutions(),
      }) as ConstructorParameters<typeof StateMachine>[0],
    );
  }

  async start(input: DeliveryInput): Promise<void> {
    const record: ExecutionRecord = { sid: input.sid, startedAt: Date.now() };
    this.executions.push(record);
    const execution = this.machine.run(
      { sid: input.sid, channelIndex: 0, waitSeconds: input.waitSeconds },
      {
        overrides: {
          taskResourceLocalHandlers: {
            DeliverOverChannel: (taskInput) =>
              this.runTask('DeliverOverChannel', deliverOverChannel, taskInput),
            // One function for both, as on AWS (the AfterWait Lambda; `settle: true` from the Catch).
            AfterWait: (taskInput) => this.runTask('AfterWait', afterWaitOrSettle, taskInput),
            SettleAfterError: (taskInput) => this.runTask('SettleAfterError', afterWaitOrSettle, taskInput),
            // arn:aws:states:::dynamodb:getItem: the runner would call it as a Lambda; do what AWS does.
            ReadDeliveryStatus: (parameters) => this.getItem(parameters),
          },
        },
      },
    );
    const done = execution.result
      .catch((error: unknown) => {
        this.logger.log('error', 'delivery.execution_failed', { sid: input.sid, error: String(error) });
      })
      .finally(() => {
        record.endedAt = Date.now();
        this.running.delete(done);
      });
    this.running.add(done);
  }

  /** Resolves when every execution started so far has ended. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  // The engine hands tasks untyped JSON; the ASL passes the previous task's output, which has this shape.
  private async runTask(state: string, task: Task, json: unknown): Promise<JsonOutput> {
    const input = json as DeliveryTaskInput;
    const output = await task(this.deps, input);
    this.taskLog.push({ state, input, output });
    if (output.next === 'end') {
      this.logger.log('info', 'delivery.ended', { sid: output.sid, deliveryStatus: output.deliveryStatus });
    }
    return output as unknown as JsonOutput;
  }

  /**
   * The DynamoDB integration's GetItem with the state's Parameters as they are (TableName, Key, projection,
   * consistency), answering as the integration does: the item in DynamoDB JSON (`{ Item: { delivery_status:
   * { S: 'DELIVERED' } } }`), `{}` when there is none. The document client sends the plain command unchanged.
   */
  private async getItem(json: unknown): Promise<JsonOutput> {
    const parameters = json as GetItemCommandInput;
    const client = this.table.client as DynamoDBClient;
    const { Item } = await client.send(new GetItemCommand({ ...parameters }));
    const status = Item?.delivery_status;
    this.readLog.push({
      pk: String(parameters.Key?.pk?.S),
      at: Date.now(),
      ...(status && 'S' in status && { deliveryStatus: status.S }),
    });
    return (Item ? { Item } : {}) as JsonOutput;
  }
}

type JsonOutput = Awaited<ReturnType<NonNullable<TaskHandlers>[string]>>;
type TaskHandlers = NonNullable<
  NonNullable<Parameters<StateMachine['run']>[1]>['overrides']
>['taskResourceLocalHandlers'];
