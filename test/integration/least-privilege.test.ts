/**
 * Least privilege, checked against the code: each function's own code runs against DynamoDB Local through a
 * client that enforces exactly the IAM grants the synthesized template gives that function's role (actions,
 * table or index, `dynamodb:LeadingKeys` prefixes), with a key ring holding exactly the key secrets its
 * environment names. A grant the code needs and the template lacks fails here as AccessDenied would on AWS; a
 * call outside the grants is recorded and fails the test. The provider receipt functions exist only with a
 * provider configuration: their grants come from the stack synthesized with providers.example.json.
 */
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CfnElement } from 'aws-cdk-lib';
import { testApp } from '../support/cdk';
import { Template } from 'aws-cdk-lib/assertions';
import type { DynamoDBStreamEvent, SNSEvent } from 'aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { cryptoRandom, deriveKey, systemClock } from '../../functions/adapters/crypto';
import { dynamoAccounts } from '../../functions/wiring/accounts';
import { TABLE_SCHEMA, keys } from '../../functions/adapters/dynamodb/keys';
import { DynamoGuardStore } from '../../functions/adapters/dynamodb/guard';
import { DynamoWebhookDeliveries, DynamoWebhookEndpoints } from '../../functions/adapters/dynamodb/webhooks';
import { guardEventsFromStream } from '../../functions/adapters/guard/stream';
import { consumeGuardEvents } from '../../functions/core/guard/consumer';
import { KEY_GROUPS, KEY_GROUP_NAMES, groupKeyRing, type KeyGroup } from '../../functions/adapters/keyring';
import type { Logger } from '../../functions/adapters/logger';
import { SIGNATURE_HEADER, signPayload } from '../../functions/adapters/providers/signature';
import { signWebhookContent } from '../../functions/adapters/webhooks/signing';
import { WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';
import { handleVerificationStream } from '../../functions/adapters/webhooks/stream';
import {
  afterReceiptWait,
  deliverOverChannel,
  type DeliveryTaskInput,
  type DeliveryTaskOutput,
} from '../../functions/core/delivery';
import { UNITS_PER_USD } from '../../functions/core/money';
import type { DeliveryInput } from '../../functions/core/ports';
import { restartStalledDeliveries, settleOverdueDeliveries } from '../../functions/core/sweeper';
import {
  runWebhookJob,
  type QueuedJob,
  type WebhookJob,
  type WebhookQueue,
  type WebhookRequest,
} from '../../functions/core/webhooks';
import { buildApi, buildReceiptHandler, type ApiHandler } from '../../functions/http/api';
import { CONSOLE_API_ROUTES, buildConsoleHandler } from '../../functions/console/routes';
import { buildConsoleDeps } from '../../functions/wiring/console';
import type { ApiContext, ApiEvent } from '../../functions/http/middleware';
import { buildDeps, buildWebhookSenderDeps, type Deps } from '../../functions/runtime';
import { buildSnsReceiptHandler, type EventReceiptDeps } from '../../functions/receipts/handlers';
import type { ProviderFunctionName } from '../../lib/functions';
import { PROVIDER_CONTEXT_KEYS } from '../../lib/provider-config';
import { OtpStack } from '../../lib/otp-stack';
import { whatsAppSnsEvent } from '../support/provider-events';
import { BY_TEST } from '../support/harness';
import { freshTable, type TestTable } from '../support/table';

type FunctionName = keyof OtpStack['functions'] | ProviderFunctionName;

const ROOT = path.join(__dirname, '..', '..');
const CDK_CONTEXT = (JSON.parse(readFileSync(path.join(ROOT, 'cdk.json'), 'utf8')) as { context: object })
  .context;

/** One statement of a role on the table or one of its indexes. */
interface Grant {
  actions: string[];
  /** `table`, or `index/<name>`. */
  resource: string;
  /** The LeadingKeys patterns (`SERVICE#*`); undefined when the statement has no condition. */
  leadingKeys?: RegExp[];
}

interface FunctionGrants {
  table: Grant[];
  keyGroups: KeyGroup[];
}

/** What the synthesized template grants each function: table statements and the key secrets it is told of. */
function grantsFromTemplate(
  context: Record<string, unknown> = {},
  functionsOf: (stack: OtpStack) => Partial<Record<FunctionName, NodejsFunction>> = (stack) =>
    stack.functions,
): Partial<Record<FunctionName, FunctionGrants>> {
  const app = testApp({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new OtpStack(app, 'OtpVerify');
  const template = Template.fromStack(stack).toJSON() as {
    Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  };
  const logicalId = (element: CfnElement) => stack.resolve(element.logicalId) as string;
  const tableArn = JSON.stringify({
    'Fn::GetAtt': [logicalId(stack.table.node.defaultChild as CfnElement), 'Arn'],
  });
  const out: Partial<Record<FunctionName, FunctionGrants>> = {};
  const functions = functionsOf(stack);
  for (const name of Object.keys(functions) as FunctionName[]) {
    const fn = functions[name]!;
    const roleId = logicalId(fn.role!.node.defaultChild as CfnElement);
    const table: Grant[] = [];
    for (const resource of Object.values(template.Resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      if (!(resource.Properties.Roles as { Ref: string }[]).some((role) => role.Ref === roleId)) continue;
      const document = resource.Properties.PolicyDocument as {
        Statement: {
          Action: string | string[];
          Resource: unknown;
          Condition?: Record<string, Record<string, unknown>>;
        }[];
      };
      for (const statement of document.Statement) {
        const actions = [statement.Action].flat().filter((action) => action.startsWith('dynamodb:'));
        if (actions.length === 0) continue;
        const patterns = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] as
          string[] | undefined;
        for (const target of [statement.Resource].flat()) {
          const text = JSON.stringify(target);
          let where: string | undefined;
          if (text === tableArn) where = 'table';
          const join = (target as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
          if (join && JSON.stringify(join[1][0]) === tableArn) where = String(join[1][1]).replace(/^\//, '');
          if (!where) continue; // the stream, ListStreams on "*": not table access
          table.push({
            actions: actions.map((action) => action.replace(/^dynamodb:/, '')),
            resource: where,
            ...(patterns && {
              leadingKeys: patterns.map(
                (pattern) => new RegExp(`^${pattern.replace(/[#]/g, '\\#').replace(/\*/g, '.*')}$`),
              ),
            }),
          });
        }
      }
    }
    const variables = (
      template.Resources[logicalId(fn.node.defaultChild as CfnElement)]!.Properties.Environment as {
        Variables: Record<string, unknown>;
      }
    ).Variables;
    const keyGroups = KEY_GROUP_NAMES.filter((group) => variables[KEY_GROUPS[group].env] !== undefined);
    out[name] = { table, keyGroups };
  }
  if (app.outdir.startsWith(tmpdir())) rmSync(app.outdir, { recursive: true, force: true });
  return out;
}

/** One request as IAM authorizes it: an action on one item (its partition key) of the table or an index. */
interface Access {
  action: string;
  resource: string;
  pk?: string;
}

const pkOf = (key: unknown): string | undefined => {
  const pk = (key as Record<string, unknown> | undefined)?.[TABLE_SCHEMA.partitionKey];
  return typeof pk === 'string' ? pk : ((pk as { S?: string } | undefined)?.S ?? undefined);
};

/** The accesses one SDK call asks IAM for (a transaction: one per item, with the item's own action). */
function accessesOf(commandName: string, input: Record<string, unknown>): Access[] {
  const operation = commandName.replace(/Command$/, '');
  switch (operation) {
    case 'GetItem':
    case 'DeleteItem':
    case 'UpdateItem':
      return [{ action: operation, resource: 'table', pk: pkOf(input.Key) }];
    case 'PutItem':
      return [{ action: operation, resource: 'table', pk: pkOf(input.Item) }];
    case 'BatchGetItem':
    case 'BatchWriteItem': {
      const requests = Object.values(input.RequestItems as Record<string, { Keys?: unknown[] } | unknown[]>);
      return requests.flatMap((request) =>
        (Array.isArray(request) ? request : (request.Keys ?? [])).map((key) => ({
          action: operation,
          resource: 'table',
          pk: pkOf(key) ?? pkOf((key as { PutRequest?: { Item: unknown } }).PutRequest?.Item),
        })),
      );
    }
    case 'TransactWriteItems':
      return (input.TransactItems as Record<string, { Key?: unknown; Item?: unknown }>[]).flatMap((item) =>
        Object.entries(item).map(([kind, request]) => ({
          action: kind === 'ConditionCheck' ? 'ConditionCheckItem' : `${kind}Item`,
          resource: 'table',
          pk: pkOf(request.Key ?? request.Item),
        })),
      );
    case 'Query': {
      // The table has no secondary index: a Query names the table's partition key.
      const index = input.IndexName as string | undefined;
      const partitionKey = TABLE_SCHEMA.partitionKey;
      const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
      const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
      let pk: string | undefined;
      for (const [, name, placeholder] of String(input.KeyConditionExpression).matchAll(
        /([#\w]+)\s*=\s*(:\w+)/g,
      )) {
        if ((names[name!] ?? name) === partitionKey)
          pk = pkOf({ [TABLE_SCHEMA.partitionKey]: values[placeholder!] });
      }
      return [{ action: 'Query', resource: index ? `index/${index}` : 'table', pk }];
    }
    default:
      return [{ action: operation, resource: 'table' }];
  }
}

const allows = (grant: Grant, access: Access): boolean =>
  grant.actions.includes(access.action) &&
  grant.resource === access.resource &&
  (grant.leadingKeys === undefined ||
    (access.pk !== undefined && grant.leadingKeys.some((pattern) => pattern.test(access.pk!))));

let grants: Record<FunctionName, FunctionGrants>;
const violations: string[] = [];
const calls: Record<string, number> = {};
let table: TestTable;

/** A document client that lets through only what `name`'s role may do, as IAM would. */
function clientFor(name: FunctionName): DynamoDBDocumentClient {
  const client = table.client();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const accesses = accessesOf(context.commandName ?? 'Unknown', args.input as Record<string, unknown>);
      calls[name] = (calls[name] ?? 0) + 1;
      const denied = accesses.filter((access) => !grants[name].table.some((grant) => allows(grant, access)));
      if (denied.length > 0) {
        violations.push(
          ...denied.map((access) => `${name}: ${access.action} on ${access.resource} ${access.pk ?? ''}`),
        );
        throw Object.assign(new Error(`${name} is not authorized: ${JSON.stringify(denied)}`), {
          name: 'AccessDeniedException',
        });
      }
      return next(args);
    },
    { step: 'initialize', priority: 'high', name: 'iamGrants' },
  );
  return client;
}

/** One random root per key group, as the stack's generated secrets would hold. */
const roots = Object.fromEntries(
  KEY_GROUP_NAMES.map((group) => [group, randomBytes(32).toString('base64url')]),
) as Record<KeyGroup, string>;
/** Exactly the keys of the secrets the template names in the function's environment. */
const ringFor = (name: FunctionName) =>
  groupKeyRing(Object.fromEntries(grants[name].keyGroups.map((group) => [group, roots[group]])));

const quiet: Logger = { log: () => undefined };
const CODE = '918273';
const ACCEPTING = '+447400123456';
const REJECTING = '+447400654321';

/** A carrier gateway: accepts for one number, rejects the other; records the bearer tokens it was sent. */
let carrier: Server;
const carrierTokens: string[] = [];

let env: Record<string, string>;
let serviceSid: string;
let apiKey: string;
let webhookSecret: string;
const started: DeliveryInput[] = [];

/** The Lambda dependencies of one function: its own client, its own key ring. */
function depsFor(name: FunctionName): Deps {
  return {
    ...buildDeps(env, ringFor(name), quiet, clientFor(name)),
    random: { code: () => CODE, sid: cryptoRandom.sid },
    workflow: { start: async (input) => void started.push(input) },
  };
}

function apiEvent(
  routeKey: string,
  pathParameters: Record<string, string>,
  options: { body?: string; headers?: Record<string, string> } = {},
): ApiEvent {
  const [method, template] = routeKey.split(' ') as [string, string];
  const rawPath = template.replace(/\{(\w+)\}/g, (_m, name: string) => pathParameters[name]!);
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString: '',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...options.headers },
    pathParameters,
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(options.body !== undefined && { body: options.body }),
    isBase64Encoded: false,
  };
}

const context = { awsRequestId: 'test' } as ApiContext;
const call = async (handler: ApiHandler, event: ApiEvent) => {
  const response = await handler(event, context);
  return { status: response.statusCode, body: JSON.parse(response.body) as Record<string, unknown> };
};
const SEND = 'POST /v2/Services/{ServiceSid}/Verifications';

async function send(to: string, idempotencyKey?: string) {
  return call(
    buildApi(depsFor('send')).send,
    apiEvent(
      SEND,
      { ServiceSid: serviceSid },
      {
        body: new URLSearchParams({ To: to }).toString(),
        headers: { 'x-api-key': apiKey, ...(idempotencyKey && { 'idempotency-key': idempotencyKey }) },
      },
    ),
  );
}

/** Runs the workflow's two tasks, each as its own function, until delivery ends. */
async function deliver(sid: string, onWait: () => Promise<void> = async () => undefined) {
  let state: DeliveryTaskOutput = { sid, channelIndex: 0, waitSeconds: 0, next: 'deliver' };
  for (let step = 0; step < 20 && state.next !== 'end'; step++) {
    const input: DeliveryTaskInput = { sid: state.sid, channelIndex: state.channelIndex, waitSeconds: 0 };
    if (state.next === 'deliver') state = await deliverOverChannel(depsFor('deliver'), input);
    else {
      await onWait();
      state = await afterReceiptWait(depsFor('afterWait'), input);
    }
  }
  return state;
}

beforeAll(async () => {
  grants = {
    ...grantsFromTemplate(),
    // The receipt functions as the stack synthesized with the example provider configuration grants them.
    ...grantsFromTemplate(
      { [PROVIDER_CONTEXT_KEYS.providersFile]: path.join(ROOT, 'providers.example.json') },
      (stack) => stack.providers!.receiptLambdas,
    ),
  } as Record<FunctionName, FunctionGrants>;
  table = await freshTable('iam');

  carrier = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      carrierTokens.push(req.headers.authorization ?? '');
      const message = JSON.parse(body) as { to: string; reference: string };
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify(
          message.to !== REJECTING
            ? { status: 'accepted', messageId: `m-${message.reference}` }
            : { status: 'rejected', reason: 'unknown subscriber' },
        ),
      );
    });
  });
  await new Promise<void>((resolve) => carrier.listen(0, '127.0.0.1', resolve));
  env = {
    TABLE_NAME: table.name,
    OTP_CARRIER_URL: `http://127.0.0.1:${(carrier.address() as AddressInfo).port}`,
    WEBHOOK_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/unused',
    WEBHOOK_DEAD_LETTER_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/unused-dlq',
  };

  // The operator's side (admin command): unrestricted.
  const admin = table.client();
  // Keys tagged under the deployment's api-key-tag secret, as the admin command issues them.
  const accounts = dynamoAccounts(admin, table.name, {
    apiKeyTag: groupKeyRing({ apiKeyTag: roots.apiKeyTag }),
  });
  const service = await accounts.createService(BY_TEST, {
    name: 'IAM',
    balance: 100 * UNITS_PER_USD,
    channels: ['sms', 'whatsapp'],
    defaultTemplateBody: 'Your code is {code}.',
  });
  serviceSid = service.sid;
  ({ apiKey } = await accounts.issueApiKey(BY_TEST, serviceSid));
  const added = await new DynamoWebhookEndpoints(admin, table.name).addEndpoint(
    serviceSid,
    'https://hooks.example.com/otp',
    new WebhookSecretVault(groupKeyRing({ webhook: roots.webhook })),
    cryptoRandom,
  );
  if (!added.ok) throw new Error('no endpoint');
  webhookSecret = added.secret;
}, 60_000);

afterAll(async () => {
  table?.close();
  await new Promise((resolve) => carrier?.close(resolve));
});

describe('each function runs with exactly its template grants', () => {
  let delivered: string;
  let rejected: string;
  let before: Record<string, AttributeValue> | undefined;
  let after: Record<string, AttributeValue> | undefined;
  let jobs: QueuedJob[] = [];

  const rawItem = async (sid: string) => {
    return (
      await table.raw.send(
        new GetItemCommand({
          TableName: table.name,
          Key: { pk: { S: keys.verification(sid).pk }, sk: { S: 'VERIFICATION' } },
          ConsistentRead: true,
        }),
      )
    ).Item;
  };

  test('send: new sends, an idempotent replay, and a send refused by the burst limit', async () => {
    const first = await send(ACCEPTING, 'order-1');
    expect(first.status).toBe(201);
    delivered = first.body.sid as string;
    const replay = await send(ACCEPTING, 'order-1');
    expect(replay).toMatchObject({ status: 201, body: { sid: delivered } });
    expect((await send(ACCEPTING)).status).toBe(201);
    expect((await send(ACCEPTING)).status).toBe(201);
    // The fourth send to the number within the burst window: refused, and still counted on the number.
    expect((await send(ACCEPTING)).body.code).toBe('burst');
    const other = await send(REJECTING);
    expect(other.status).toBe(201);
    rejected = other.body.sid as string;
    expect(started.length).toBe(4);
  });

  test('deliver, receipt and afterWait: a delivered message, with the carrier token of the carrier key', async () => {
    before = await rawItem(delivered);
    const state = await deliver(delivered, async () => {
      const body = JSON.stringify({
        reference: `${delivered}.0`,
        messageId: `m-${delivered}.0`,
        status: 'delivered',
      });
      const receipt = await call(
        buildReceiptHandler(depsFor('receipt')),
        apiEvent(
          'POST /v2/Callbacks/{Provider}',
          { Provider: 'carrier' },
          {
            body,
            headers: {
              'content-type': 'application/json',
              [SIGNATURE_HEADER]: signPayload(deriveKey(roots.carrier, 'receipt:carrier'), body, new Date()),
            },
          },
        ),
      );
      expect(receipt.status).toBe(200);
    });
    expect(state).toMatchObject({ next: 'end', deliveryStatus: 'DELIVERED' });
    after = await rawItem(delivered);
    expect(carrierTokens).toContain(
      `Bearer ${deriveKey(roots.carrier, 'carrier-token').toString('base64url')}`,
    );
  });

  test('deliver and afterWait: every channel rejects, delivery FAILED and the number marked', async () => {
    expect(await deliver(rejected)).toMatchObject({ next: 'end', deliveryStatus: 'FAILED' });
    // The tasks wrote the rejections on the number's item (NUMBER#), which send reads.
    const number = await table.raw.send(
      new GetItemCommand({
        TableName: table.name,
        Key: { pk: { S: keys.number(REJECTING).pk }, sk: { S: keys.number(REJECTING).sk } },
        ConsistentRead: true,
      }),
    );
    expect(Object.keys(number.Item ?? {}).some((name) => /^(rejected_|unreachable)/.test(name))).toBe(true);
  });

  test('fetch and check: the right code verifies (check holds the code-hash key only)', async () => {
    const path = { ServiceSid: serviceSid, VerificationSid: delivered };
    const fetched = await call(
      buildApi(depsFor('fetch')).fetch,
      apiEvent('GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}', path, {
        headers: { 'x-api-key': apiKey },
      }),
    );
    expect(fetched).toMatchObject({ status: 200, body: { sid: delivered, delivery_status: 'DELIVERED' } });
    const check = (code: string) =>
      call(
        buildApi(depsFor('check')).check,
        apiEvent(
          'POST /v2/Services/{ServiceSid}/VerificationCheck',
          { ServiceSid: serviceSid },
          {
            body: new URLSearchParams({ VerificationSid: delivered, Code: code }).toString(),
            headers: { 'x-api-key': apiKey },
          },
        ),
      );
    expect((await check('000000')).status).toBe(422);
    expect(await check(CODE)).toMatchObject({ status: 200, body: { sid: delivered } });
  });

  test('sweeper: restarts the deliveries that never started, from the index and their items', async () => {
    const later = { now: () => new Date(Date.now() + 60_000) };
    started.length = 0;
    const restarted = await restartStalledDeliveries({ ...depsFor('sweeper'), clock: later });
    expect(restarted.length).toBeGreaterThanOrEqual(2);
    expect(started.map((input) => input.sid).sort()).toEqual([...restarted].sort());
  });

  test('sweeper: settles a delivery claimed but never ended (its execution died after the first task)', async () => {
    const sid = started[0]!.sid;
    expect(
      await deliverOverChannel(depsFor('deliver'), { sid, channelIndex: 0, waitSeconds: 0 }),
    ).toMatchObject({
      next: 'wait',
    });
    const muchLater = { now: () => new Date(Date.now() + 20 * 60_000) };
    const settled = await settleOverdueDeliveries({ ...depsFor('sweeper'), clock: muchLater });
    expect(settled).toEqual([expect.objectContaining({ sid, next: 'end', deliveryStatus: 'SENT' })]);
  });

  test('webhookEvents: the stream record of the delivery finds the service endpoints', async () => {
    const queue: WebhookQueue = {
      maxDelaySeconds: 900,
      enqueue: async (queued) => void jobs.push(...queued),
      deadLetter: async () => undefined,
    };
    const event = {
      Records: [{ eventName: 'MODIFY', dynamodb: { OldImage: before, NewImage: after } }],
    } as unknown as DynamoDBStreamEvent;
    const published = await handleVerificationStream(
      {
        endpoints: new DynamoWebhookEndpoints(clientFor('webhookEvents'), table.name),
        queue,
        clock: systemClock,
      },
      event,
    );
    expect(published.jobs).toBeGreaterThan(0);
    jobs = jobs.filter((queued) => queued.job.kind === 'deliver');
    expect(jobs.length).toBeGreaterThan(0);
  });

  test('guardSignals: folds the stream record of a send into its aggregates, twice (read and write back)', async () => {
    const events = guardEventsFromStream([
      { eventName: 'INSERT', dynamodb: { NewImage: after } },
    ] as unknown as DynamoDBStreamEvent['Records']);
    expect(events).toHaveLength(1);
    const deps = { store: new DynamoGuardStore(clientFor('guardSignals'), table.name), clock: systemClock };
    await consumeGuardEvents(deps, events);
    await consumeGuardEvents(deps, events);
  });

  test('webhookSender: signs with the endpoint secret it opens with the webhook key, records the attempt, writes expiry back', async () => {
    const posted: WebhookRequest[] = [];
    const deps = {
      ...buildWebhookSenderDeps(env, ringFor('webhookSender'), clientFor('webhookSender')),
      transport: { post: async (request: WebhookRequest) => (posted.push(request), { status: 204 }) },
      queue: { maxDelaySeconds: 900, enqueue: async () => undefined, deadLetter: async () => undefined },
    };
    const job = jobs[0]!.job as Extract<WebhookJob, { kind: 'deliver' }>;
    expect(await runWebhookJob(deps, job)).toBe('delivered');
    // The attempt's record, written with the sender's grants (a denied write would only be logged) and read back
    // with the console's.
    expect(await new DynamoWebhookDeliveries(clientFor('console'), table.name).recent(serviceSid)).toEqual([
      expect.objectContaining({
        eventId: job.eventId,
        attempt: 1,
        status: 204,
        delivered: true,
        final: false,
      }),
    ]);
    const headers = posted[0]!.headers;
    expect(headers['webhook-signature']).toBe(
      signWebhookContent(
        webhookSecret,
        `${headers['webhook-id']}.${headers['webhook-timestamp']}.${job.payload}`,
      ),
    );
    const expire: WebhookJob = {
      kind: 'expire',
      serviceSid,
      verificationSid: delivered,
      expiresAt: new Date(0).toISOString(),
    };
    expect(await runWebhookJob(deps, expire)).toBe('expired');
  });

  /** A new verification to `to`, its first channel sent by the deliver task (the carrier accepts it). */
  async function sentOnFirstChannel(to: string) {
    const sent = await send(to);
    expect(sent.status).toBe(201);
    const sid = sent.body.sid as string;
    expect(
      await deliverOverChannel(depsFor('deliver'), { sid, channelIndex: 0, waitSeconds: 0 }),
    ).toMatchObject({ next: 'wait' });
    return { sid, channel: sent.body.channel, reference: `${sid}.0`, messageId: `m-${sid}.0` };
  }

  /** The receipt functions' dependencies: their own client and key ring, the providers by name as deployed. */
  const receiptDepsFor = (name: ProviderFunctionName): EventReceiptDeps =>
    buildDeps(
      { ...env, OTP_PROVIDERS: '{"sms":"aws-sms","whatsapp":"aws-whatsapp"}' },
      ringFor(name),
      quiet,
      clientFor(name),
    );
  const snsEvent = (message: unknown) =>
    ({ Records: [{ Sns: { Message: JSON.stringify(message) } }] }) as unknown as SNSEvent;

  test('snsReceipt: an SMS event and WhatsApp statuses (with and without AWS message id) settle attempts', async () => {
    const handler = buildSnsReceiptHandler(receiptDepsFor('snsReceipt'));
    // India: SMS is the cheaper channel; the UK: WhatsApp (functions/core/routing.ts).
    const sms = await sentOnFirstChannel('+919812345601');
    expect(sms.channel).toBe('sms');
    const smsEvent = {
      eventType: 'TEXT_DELIVERED',
      isFinal: true,
      messageId: sms.messageId,
      context: { otpReference: sms.reference },
    };
    expect(await handler(snsEvent(smsEvent))).toEqual(['applied']);
    for (const messageId of [undefined, 'id']) {
      const whatsApp = await sentOnFirstChannel(messageId ? '+447400123457' : '+447400123458');
      expect(whatsApp.channel).toBe('whatsapp');
      const status = whatsAppSnsEvent({
        status: 'delivered',
        reference: whatsApp.reference,
        messageId: messageId && whatsApp.messageId,
      });
      expect(await handler(snsEvent(status))).toEqual(['applied']);
    }
  });

  test('console: every page of a member and of an operator, with its grants and the webhook key only', async () => {
    const admin = table.client();
    const accounts = dynamoAccounts(admin, table.name);
    await accounts.addMember(BY_TEST, serviceSid, 'member@example.com');
    // Operator rights need the sign-in group and the table's record (admin `operator add`).
    await accounts.setOperator(BY_TEST, 'operator-sub', true);
    const handler = buildConsoleHandler(
      buildConsoleDeps(
        env,
        { client: clientFor('console'), tableName: table.name },
        ringFor('console'),
        quiet,
        async () => ({
          files: { 'index.html': '<!doctype html>' },
        }),
      ),
    );
    const as =
      (sub: string, groups?: string) =>
      async (
        method: string,
        path: string,
        body?: unknown,
      ): Promise<{ status: number; body: Record<string, unknown> }> => {
        const event = apiEvent(
          `${method} /console/api/{proxy+}`,
          { proxy: path.slice(1) },
          {
            ...(body !== undefined && { body: JSON.stringify(body) }),
            headers: { 'content-type': 'application/json' },
          },
        );
        const [rawPath, query] = `/console/api${path}`.split('?') as [string, string | undefined];
        Object.assign(event, { rawPath, rawQueryString: query ?? '' });
        called.add(routeOf(method, path.split('?')[0]!));
        Object.assign(event.requestContext, {
          authorizer: { jwt: { claims: { sub, ...(groups && { 'cognito:groups': groups }) }, scopes: null } },
        });
        const response = await handler(event);
        return {
          status: response.statusCode,
          body: response.body.startsWith('{') ? JSON.parse(response.body) : {},
        };
      };
    // Every route of the console API is called below: a route left out could need a grant no call asks for.
    const called = new Set<string>();
    const routeOf = (method: string, path: string) =>
      CONSOLE_API_ROUTES.map((r) => `${r.method} ${r.path}`).find((route) => {
        const [routeMethod, pattern] = route.split(' ') as [string, string];
        return (
          routeMethod === method &&
          new RegExp(`^${pattern.replace(/:\w+/g, '[^/]+').replace(/\./g, '\\.')}$`).test(path)
        );
      }) ?? `${method} ${path} (no such route)`;
    const member = as('member@example.com');
    const operator = as('operator-sub', '[operators]');
    const svc = `/services/${serviceSid}`;
    const ok = async (answer: Promise<{ status: number; body: Record<string, unknown> }>) => {
      const { status, body } = await answer;
      expect([status, body.code]).toEqual([expect.any(Number), undefined]);
      expect(status).toBeLessThan(300);
      return body;
    };
    expect((await ok(member('GET', '/me'))).services).toEqual([expect.objectContaining({ sid: serviceSid })]);
    await ok(member('GET', svc));
    const issued = await ok(member('POST', `${svc}/keys`));
    expect((await ok(member('GET', `${svc}/keys`))).keys).toEqual(
      expect.arrayContaining([expect.anything()]),
    );
    await ok(member('POST', `${svc}/keys/${String(issued.keyId)}/revoke`));
    await ok(member('GET', `${svc}/charges`));
    expect((await member('GET', `${svc}/charges.csv`)).status).toBe(200);
    const list = await ok(member('GET', `${svc}/verifications`));
    expect((list.verifications as unknown[]).length).toBeGreaterThan(0);
    await ok(member('GET', `${svc}/verifications?q=${encodeURIComponent(ACCEPTING)}`));
    await ok(member('GET', `${svc}/verifications?q=${delivered}`));
    await ok(member('GET', `${svc}/verifications/${delivered}`));
    await ok(member('GET', `${svc}/conversion`));
    const template = await ok(member('POST', `${svc}/templates`, { body: 'IAM {code}', default: true }));
    await ok(member('POST', `${svc}/templates/${String(template.sid)}/default`));
    await ok(member('GET', `${svc}/templates`));
    const spare = await ok(member('POST', `${svc}/templates`, { body: 'Spare {code}' }));
    await ok(member('POST', `${svc}/templates/${String(spare.sid)}/remove`));
    const rules = await ok(member('GET', `${svc}/rules`));
    await ok(
      member('PUT', `${svc}/rules`, {
        blockedCountries: [],
        blockedPrefixes: [],
        rulesVersion: rules.rulesVersion,
      }),
    );
    const guard = await ok(member('GET', `${svc}/guard`));
    await ok(member('PUT', `${svc}/guard`, { level: 'standard', guardVersion: guard.guardVersion }));
    await ok(member('POST', `${svc}/guard/unblock`, { prefix: '+44' }));
    await ok(member('PUT', `${svc}/caps/GB`, { hourlySends: 1000 }));
    await ok(member('GET', `${svc}/caps`));
    const { channelsVersion } = await ok(member('GET', svc));
    await ok(member('PUT', `${svc}/channels`, { channels: ['sms', 'whatsapp'], channelsVersion }));
    const hook = await ok(member('POST', `${svc}/webhooks`, { url: 'https://hooks.example.com/console' }));
    await ok(member('POST', `${svc}/webhooks/${String(hook.endpointSid)}/rotate`, {}));
    await ok(member('POST', `${svc}/webhooks/${String(hook.endpointSid)}/disable`));
    await ok(member('POST', `${svc}/webhooks/${String(hook.endpointSid)}/enable`));
    await ok(member('GET', `${svc}/webhooks`));
    // The secret it sealed opens with the webhook key the sender holds.
    const endpoint = await new DynamoWebhookEndpoints(admin, table.name).getEndpoint(
      serviceSid,
      String(hook.endpointSid),
    );
    expect(
      new WebhookSecretVault(groupKeyRing({ webhook: roots.webhook })).signingSecrets(endpoint!, new Date()),
    ).toHaveLength(2);
    expect((await ok(operator('GET', '/me'))).services).toEqual(
      expect.arrayContaining([expect.objectContaining({ sid: serviceSid })]),
    );
    await ok(operator('POST', '/services', { name: 'Operator made', balance: '1' }));
    await ok(operator('GET', '/services'));
    await ok(operator('POST', `${svc}/topup`, { amount: '1' }));
    await ok(operator('GET', `${svc}/members`));
    await ok(member('GET', `${svc}/audit`));
    expect([...called].sort()).toEqual(CONSOLE_API_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  test('no call went beyond its grants, and every function made some', () => {
    expect(violations).toEqual([]);
    for (const name of Object.keys(grants) as FunctionName[]) expect(calls[name] ?? 0).toBeGreaterThan(0);
  });
});

describe('the enforcement is real', () => {
  test("a function's code with another's grants is denied (send with check's)", async () => {
    const before = violations.length;
    const deps = { ...depsFor('send'), ...buildDeps(env, ringFor('send'), quiet, clientFor('check')) };
    const response = await call(
      buildApi({ ...deps, workflow: { start: async () => undefined } }).send,
      apiEvent(
        SEND,
        { ServiceSid: serviceSid },
        { body: 'To=%2B14155550100', headers: { 'x-api-key': apiKey } },
      ),
    );
    expect(response.status).toBe(500);
    expect(violations.slice(before).some((line) => /^check: BatchGetItem on table SERVICE#/.test(line))).toBe(
      true,
    );
    violations.length = before;
  });

  test('a key ring without the purpose fails where the key is needed (the check function cannot seal)', () => {
    expect(() => ringFor('check').key('code-encryption')).toThrow(/OTP_CODE_SEAL_SECRET_ARN/);
    expect(() => ringFor('fetch').key('code-hash')).toThrow();
    expect(() => ringFor('webhookSender').key('receipt:carrier')).toThrow();
  });
});
