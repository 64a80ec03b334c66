/**
 * The AWS side of webhooks without AWS: the SQS queue adapter against a recording client, the sender's batch
 * handler (batch item failures), and the events handler on Lambda-shaped stream records.
 */
import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, SQSEvent } from 'aws-lambda';
import { verificationToItem } from '../../functions/adapters/dynamodb/items';
import { silentLogger } from '../../functions/adapters/logger';
import {
  SqsWebhookQueue,
  handleWebhookQueueBatch,
  parseWebhookJob,
} from '../../functions/adapters/webhooks/sqs-queue';
import {
  changeFromStreamRecord,
  guardAlertsFromStreamRecord,
  handleVerificationStream,
} from '../../functions/adapters/webhooks/stream';
import type { Verification } from '../../functions/core/model';
import type { QueuedJob, WebhookJob, WebhookSenderDeps } from '../../functions/core/webhooks';
import { FakeClock } from '../support/fake-clock';
import { SERVICE_SID, aVerification } from '../support/fixtures';

const SERVICE = SERVICE_SID;
const deliver = (attempt = 1): WebhookJob => ({
  kind: 'deliver',
  serviceSid: SERVICE,
  endpointSid: 'WH1',
  eventId: 'EV1',
  eventType: 'verification.verified',
  payload: '{"id":"EV1"}',
  attempt,
});

function recordingClient(failFirst = 0) {
  const sent: unknown[] = [];
  const client = {
    send: async (command: unknown) => {
      sent.push(command);
      if (command instanceof SendMessageBatchCommand) {
        const entries = command.input.Entries ?? [];
        return {
          Successful: entries.slice(failFirst).map((entry) => ({ Id: entry.Id })),
          Failed: entries.slice(0, failFirst).map((entry) => ({ Id: entry.Id, Message: 'throttled' })),
        };
      }
      return {};
    },
  };
  return { client: client as unknown as SQSClient, sent };
}

describe('SqsWebhookQueue', () => {
  it('sends in batches of ten, delays rounded up to whole seconds and capped at 15 minutes', async () => {
    const { client, sent } = recordingClient();
    const queue = new SqsWebhookQueue('https://sqs.example/q', 'https://sqs.example/dlq', client);
    const jobs: QueuedJob[] = Array.from({ length: 12 }, (_, i) => ({
      job: deliver(i + 1),
      delaySeconds: i === 0 ? 0.02 : i === 1 ? 5000 : 0,
    }));
    await queue.enqueue(jobs);
    expect(sent).toHaveLength(2);
    const [first, second] = sent as SendMessageBatchCommand[];
    expect(first!.input.QueueUrl).toBe('https://sqs.example/q');
    expect(first!.input.Entries).toHaveLength(10);
    expect(second!.input.Entries).toHaveLength(2);
    expect(first!.input.Entries![0]!.DelaySeconds).toBe(1);
    expect(first!.input.Entries![1]!.DelaySeconds).toBe(900);
    expect(parseWebhookJob(first!.input.Entries![3]!.MessageBody!)).toEqual(deliver(4));
    // The endpoint's disable count rides along, or every retry of a once-disabled endpoint would be dropped.
    const counted = { ...deliver(2), endpointDisableCount: 3 };
    expect(parseWebhookJob(JSON.stringify(counted))).toEqual(counted);
    expect(queue.maxDelaySeconds).toBe(900);
  });

  it('a partly refused batch throws, so the caller is retried (duplicates are deduped, losses are not)', async () => {
    const { client } = recordingClient(1);
    const queue = new SqsWebhookQueue('https://sqs.example/q', undefined, client);
    await expect(queue.enqueue([{ job: deliver(), delaySeconds: 0 }])).rejects.toThrow('SQS refused 1');
  });

  it('dead letters carry the job and the reason', async () => {
    const { client, sent } = recordingClient();
    await new SqsWebhookQueue('https://sqs.example/q', 'https://sqs.example/dlq', client).deadLetter(
      deliver(9),
      '9 attempts failed; last: HTTP 500',
    );
    const [command] = sent as SendMessageCommand[];
    expect(command).toBeInstanceOf(SendMessageCommand);
    expect(command!.input.QueueUrl).toBe('https://sqs.example/dlq');
    expect(JSON.parse(command!.input.MessageBody!)).toMatchObject({
      job: deliver(9),
      reason: '9 attempts failed; last: HTTP 500',
    });
  });
});

describe('handleWebhookQueueBatch', () => {
  it('reports exactly the messages whose job threw (bad body, store down), and deletes the rest', async () => {
    const deps = {
      clock: new FakeClock(),
      endpoints: {
        getEndpoint: async (_service: string, endpointSid: string) => {
          if (endpointSid === 'WHdown') throw new Error('DynamoDB unreachable');
          return undefined; // removed: the job is dropped
        },
      },
    } as unknown as WebhookSenderDeps;
    const event = {
      Records: [
        { messageId: 'm1', body: JSON.stringify(deliver()) },
        { messageId: 'm2', body: '{"kind":"deliver"}' },
        { messageId: 'm3', body: JSON.stringify({ ...deliver(), endpointSid: 'WHdown' }) },
        { messageId: 'm4', body: 'not json' },
      ],
    } as unknown as SQSEvent;
    expect(await handleWebhookQueueBatch(deps, event, silentLogger)).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm2' }, { itemIdentifier: 'm3' }, { itemIdentifier: 'm4' }],
    });
  });
});

describe('handleVerificationStream', () => {
  const verification = aVerification;
  const image = (v: Verification, extra: Record<string, unknown> = {}) =>
    marshall({ ...verificationToItem(v), ...extra }, { removeUndefinedValues: true }) as NonNullable<
      DynamoDBRecord['dynamodb']
    >['NewImage'];

  const modify = (
    before: Verification,
    after: Verification,
    extra: Record<string, unknown>,
  ): DynamoDBRecord => ({
    eventName: 'MODIFY',
    dynamodb: { OldImage: image(before), NewImage: image(after, extra) },
  });

  it('reads the sequence and the time of the change from the new image', () => {
    const change = changeFromStreamRecord(
      modify(verification(), verification({ status: 'VERIFIED' }), {
        event_seq: 3,
        event_at: '2026-11-21T12:01:00.000Z',
      }),
    );
    expect(change).toMatchObject({ sequence: 3, at: new Date('2026-11-21T12:01:00.000Z') });
    expect(change?.before?.status).toBe('PENDING');
    expect(change?.after.status).toBe('VERIFIED');
  });

  it('ignores deletions (TTL) and other items', () => {
    expect(
      changeFromStreamRecord({ eventName: 'REMOVE', dynamodb: { OldImage: image(verification()) } }),
    ).toBe(undefined);
    expect(
      changeFromStreamRecord({
        eventName: 'MODIFY',
        dynamodb: { NewImage: marshall({ pk: 'RATE#x', sk: 'RATE', count: 3 }) as never },
      }),
    ).toBeUndefined();
  });

  it('queues one job per event and enabled endpoint', async () => {
    const queued: QueuedJob[] = [];
    const result = await handleVerificationStream(
      {
        endpoints: {
          listEndpoints: async () => [
            {
              sid: 'WH1',
              serviceSid: SERVICE,
              url: 'https://a.example.com',
              enabled: true,
              createdAt: '',
              sealedSecret: 's',
            },
          ],
        },
        queue: {
          maxDelaySeconds: 900,
          enqueue: async (jobs) => void queued.push(...jobs),
          deadLetter: async () => {},
        },
        clock: new FakeClock(new Date('2026-11-21T12:01:00.000Z')),
      },
      {
        Records: [
          modify(verification(), verification({ deliveryStatus: 'DELIVERED' }), {
            event_seq: 1,
            event_at: '2026-11-21T12:00:30.000Z',
          }),
          { eventName: 'REMOVE', dynamodb: { OldImage: image(verification()) } },
        ],
      },
    );
    expect(result).toEqual({ events: 1, jobs: 1 });
    expect(queued[0]!.job).toMatchObject({
      kind: 'deliver',
      endpointSid: 'WH1',
      eventType: 'verification.delivery.delivered',
    });
    const payload = JSON.parse((queued[0]!.job as { payload: string }).payload) as {
      data: { delivery_status: string };
    };
    expect(payload.data.delivery_status).toBe('DELIVERED');
  });
});

describe('guard.cap_reached and guard.conversion_drop from the guard states on the stream', () => {
  const since = Date.parse('2026-11-21T12:41:07.250Z');
  const reached = (start: number, cap = 'hourly_spend') => ({
    service_sid: SERVICE,
    country: 'GB',
    cap,
    limit: 250_000,
    value: 251_200,
    since: start,
    until: Date.parse('2026-11-21T13:00:00.000Z'),
  });
  const dropped = (start: number) => ({
    service_sid: SERVICE,
    country: 'GB',
    sent: 212,
    checked: 68,
    usual_conversion: 0.81,
    ranges: 'new',
    since: start,
  });
  const stateImage = (capReached?: Record<string, unknown>, drop?: Record<string, unknown>) =>
    marshall({
      pk: `GUARD#${SERVICE}`,
      sk: 'COUNTRY#GB',
      type: 'guard_state',
      state: '{}',
      ...(capReached && { cap_reached: capReached }),
      ...(drop && { conversion_drop: drop }),
    }) as never;
  const write = (
    before?: Record<string, unknown> | null,
    after?: Record<string, unknown>,
    drops: [Record<string, unknown>?, Record<string, unknown>?] = [],
  ): DynamoDBRecord => ({
    eventName: before === null ? 'INSERT' : 'MODIFY',
    dynamodb: {
      ...(before !== null && { OldImage: stateImage(before, drops[0]) }),
      NewImage: stateImage(after, drops[1]),
    },
  });
  const types = (record: DynamoDBRecord) => guardAlertsFromStreamRecord(record).map((e) => e.type);

  it('a block new to the item is an event; the same block written again, or none, is not', () => {
    expect(guardAlertsFromStreamRecord(write(null, reached(since)))).toMatchObject([
      { type: 'guard.cap_reached', data: { service_sid: SERVICE, country: 'GB' } },
    ]);
    expect(types(write(undefined, reached(since)))).toEqual(['guard.cap_reached']);
    expect(types(write(reached(since), reached(since)))).toEqual([]);
    // The next window's block (a new start), after the last one ended.
    expect(types(write(reached(since), reached(since + 3_600_000)))).toEqual(['guard.cap_reached']);
    expect(types(write(reached(since), undefined))).toEqual([]);
    expect(types(write(undefined, undefined))).toEqual([]);
  });

  it('a conversion drop new to the item is an event, beside a cap reached written with it', () => {
    expect(types(write(undefined, undefined, [undefined, dropped(since)]))).toEqual([
      'guard.conversion_drop',
    ]);
    // The state written again in the drop's quiet hour (a block, the established ranges changed): no new event.
    expect(types(write(undefined, reached(since), [dropped(since), dropped(since)]))).toEqual([
      'guard.cap_reached',
    ]);
    expect(types(write(undefined, undefined, [dropped(since), dropped(since + 3_600_000)]))).toEqual([
      'guard.conversion_drop',
    ]);
    expect(types(write(undefined, undefined, [dropped(since), undefined]))).toEqual([]);
    const [event] = guardAlertsFromStreamRecord(write(undefined, undefined, [undefined, dropped(since)]));
    expect(event).toEqual({
      id: expect.stringMatching(/^EV[0-9a-f]{32}$/),
      type: 'guard.conversion_drop',
      created_at: '2026-11-21T12:41:07.250Z',
      data: {
        service_sid: SERVICE,
        country: 'GB',
        codes_sent: 212,
        codes_checked: 68,
        conversion: 0.32,
        usual_conversion: 0.81,
        ranges: 'new',
      },
    });
    // Not the cap's id: the same start, another event.
    const [cap] = guardAlertsFromStreamRecord(write(undefined, reached(since)));
    expect(cap!.id).not.toBe(event!.id);
  });

  it('queues one guard.cap_reached per enabled endpoint, spend as USD strings, the same id on a retry', async () => {
    const queued: QueuedJob[] = [];
    const deps = {
      endpoints: {
        listEndpoints: async () =>
          ['WH1', 'WH2', 'WH3'].map((sid) => ({
            sid,
            serviceSid: SERVICE,
            url: 'https://a.example.com',
            enabled: sid !== 'WH3',
            createdAt: '',
            sealedSecret: 's',
          })),
      },
      queue: {
        maxDelaySeconds: 900,
        enqueue: async (jobs: QueuedJob[]) => void queued.push(...jobs),
        deadLetter: async () => {},
      },
      clock: new FakeClock(new Date('2026-11-21T12:41:08.000Z')),
    };
    const event = { Records: [write(undefined, reached(since)), write(reached(since), reached(since))] };
    expect(await handleVerificationStream(deps, event)).toEqual({ events: 1, jobs: 2 });
    expect(queued.map((q) => (q.job as { endpointSid: string }).endpointSid)).toEqual(['WH1', 'WH2']);
    const body = JSON.parse((queued[0]!.job as { payload: string }).payload) as Record<string, unknown>;
    expect(body).toEqual({
      id: expect.stringMatching(/^EV[0-9a-f]{32}$/),
      type: 'guard.cap_reached',
      created_at: '2026-11-21T12:41:07.250Z',
      data: {
        service_sid: SERVICE,
        country: 'GB',
        cap: 'hourly_spend',
        limit: '25.0000',
        value: '25.1200',
        refused_until: '2026-11-21T13:00:00.000Z',
      },
    });
    // Lambda retries the batch: the same event id, which consumers dedupe.
    await handleVerificationStream(deps, event);
    expect((queued[2]!.job as { eventId: string }).eventId).toBe(
      (queued[0]!.job as { eventId: string }).eventId,
    );
  });
});
