/**
 * The pumping guard over HTTP against DynamoDB Local: the guard's state stored by its consumer (the DynamoDB
 * adapter), read in the send's own BatchGetItem (no extra request), a blocked send refused and recorded on the
 * number's log, RiskCheck, and the admin commands.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { DynamoGuardStore } from '../../functions/adapters/dynamodb/guard';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { consumeGuardEvents } from '../../functions/core/guard/consumer';
import { isProbe, type GuardEvent } from '../../functions/core/guard/aggregates';
import { adminJson } from '../support/admin-cli';
import { dynamoEndpoint, startHarness, type Account, type ApiClient, type Harness } from '../support/harness';

let harness: Harness;
let account: Account;
let api: ApiClient;
let documents: DynamoDBDocumentClient;
/** Every request the service's DynamoDB client made: the command name, and a BatchGetItem's keys. */
const requests: { command: string; keys?: { pk: string; sk: string }[] }[] = [];

beforeAll(async () => {
  harness = await startHarness({
    decorateDynamoClient: (client) =>
      client.middlewareStack.add(
        (next, context) => async (args) => {
          const input = args.input as {
            RequestItems?: Record<string, { Keys: { pk: string; sk: string }[] }>;
          };
          requests.push({
            command: String(context.commandName),
            ...(input.RequestItems && { keys: Object.values(input.RequestItems).flatMap((t) => t.Keys) }),
          });
          return next(args);
        },
        { step: 'initialize', name: 'guardTestCount' },
      ),
  });
  documents = createDocumentClient({ endpoint: dynamoEndpoint() });
});
afterAll(async () => {
  documents.destroy();
  await harness.close();
});
beforeEach(async () => {
  account = await harness.createAccount();
  api = harness.client(account);
});

let series = 0;
/**
 * A run of twenty near-consecutive GB mobiles in a thousand of their own, one every 30 s, none checked, folded
 * by the consumer: enough evidence for a block. Returns a number of that thousand that is no probe now.
 */
async function sequentialRun(): Promise<string> {
  const base = 7_400_000_000 + ++series * 1000 + 100;
  const now = harness.clock.now().getTime();
  const events: GuardEvent[] = Array.from({ length: 20 }, (_, i) => ({
    kind: 'send',
    serviceSid: account.serviceSid,
    e164: `+44${base + i * 2}`,
    country: 'GB',
    at: now - (20 - i) * 30_000,
    accepted: true,
  }));
  await consumeGuardEvents(
    { store: new DynamoGuardStore(documents, harness.tableName), clock: harness.clock },
    events,
  );
  for (let n = base + 500; ; n++) if (!isProbe(`+44${n}`, now)) return `+44${n}`;
}

const admin = (...args: string[]) => adminJson(args, harness);

describe('the send path', () => {
  it('reads the guard state in its BatchGetItem (no read of its own) and refuses a blocked range: 403, no charge, logged', async () => {
    const to = await sequentialRun();
    const balance = (await harness.accounts.getService(account.serviceSid))!.balance;
    requests.length = 0;
    const response = await api.send({ To: to });

    expect(response.status).toBe(403);
    expect(response.body).toEqual({
      code: 'blocked_by_policy',
      message: 'The pumping guard blocks this destination for now: unusual traffic to this number range.',
    });
    // The same requests as any refused send: the key's write, the BatchGetItem, the same read again up to date
    // before the refusal stands, the number's log.
    expect(requests.map((r) => r.command)).toEqual([
      'UpdateItemCommand',
      'BatchGetItemCommand',
      'BatchGetItemCommand',
      'UpdateItemCommand',
    ]);
    expect(requests[2]!.keys).toEqual(requests[1]!.keys);
    expect(requests[1]!.keys).toEqual(
      expect.arrayContaining([
        keys.guardCountry(account.serviceSid, 'GB'),
        keys.guardScope(account.serviceSid),
        keys.guardCountry('GLOBAL', 'GB'),
      ]),
    );
    expect((await harness.accounts.getService(account.serviceSid))!.balance).toBe(balance);
    expect(await harness.accounts.listCharges(account.serviceSid)).toEqual([]);
    const number = (await harness.scanTable()).find((item) => item.pk === `NUMBER#${to}`)!;
    expect(number.sends).toHaveLength(1);
    expect(number.guard).toMatchObject({
      mode: 'blocked',
      reason: 'sequential_numbers',
      service_sid: account.serviceSid,
      country: 'GB',
      price: 600,
    });
  });

  it('RiskCheck=disable sends anyway where the owner allows it (guard risk-check); another value is a 400', async () => {
    const to = await sequentialRun();
    // Without the owner's permission the send is judged as if RiskCheck were absent.
    expect((await api.send({ To: to, RiskCheck: 'disable' })).status).toBe(403);
    expect(await admin('guard', 'risk-check', 'allow', account.serviceSid)).toEqual({
      serviceSid: account.serviceSid,
      riskCheckOptOut: true,
    });
    expect(await admin('guard', 'report', account.serviceSid)).toMatchObject({ riskCheckOptOut: true });
    expect((await api.send({ To: to, RiskCheck: 'disable' })).status).toBe(201);
    expect((await api.send({ To: to, RiskCheck: 'enable' })).status).toBe(403);
    const bad = await api.send({ To: to, RiskCheck: 'off' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_parameter');
    await admin('guard', 'risk-check', 'deny', account.serviceSid);
    expect((await harness.accounts.getService(account.serviceSid))?.guard?.riskCheckOptOut).toBeUndefined();
  });
});

describe('a known number (a code of its last sends checked)', () => {
  /** A number of the next run's thousand that is no probe for the next half hour (probes: per 15 minutes). */
  const freshNumber = () => {
    const start = harness.clock.now().getTime();
    const base = 7_400_000_000 + (series + 1) * 1000 + 100;
    for (let n = base + 500; ; n++)
      if ([0, 10, 20, 30].every((m) => !isProbe(`+44${n}`, start + m * 60_000))) return `+44${n}`;
  };
  /** A send of `client`'s service to `to`, its code checked right. */
  const sendAndCheck = async (to: string, client: ApiClient = api) => {
    const sent = await client.send({ To: to });
    expect(sent.status).toBe(201);
    const code = await client.deliveredCode(to);
    expect((await client.check({ VerificationSid: String(sent.body.sid), Code: code })).status).toBe(200);
  };
  /**
   * The first send since `requests` was emptied: its BatchGetItem, the read again that also reads the service's last
   * sends to the number (their verifications), its transaction.
   */
  const expectReadAgainWithLastSends = () => {
    const sendRequests = requests.filter((r) =>
      ['BatchGetItemCommand', 'TransactWriteItemsCommand'].includes(r.command),
    );
    expect(sendRequests.slice(0, 3).map((r) => r.command)).toEqual([
      'BatchGetItemCommand',
      'BatchGetItemCommand',
      'TransactWriteItemsCommand',
    ]);
    expect(sendRequests[0]!.keys!.some((key) => key.pk.startsWith('VERIFICATION#'))).toBe(false);
    expect(sendRequests[1]!.keys).toEqual(
      expect.arrayContaining([{ pk: expect.stringMatching(/^VERIFICATION#/), sk: 'VERIFICATION' }]),
    );
  };
  /** Sends two minutes apart (the per-number burst limit is 3 in 5 minutes): the status of each. */
  const sendsEvery2Minutes = async (to: string, count: number) => {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) {
      harness.clock.advance(2 * 60_000);
      statuses.push((await api.send({ To: to })).status);
    }
    return statuses;
  };

  it("passes its service's learnt block while one of its 2 last sends was checked: read with the refusal's own read", async () => {
    const to = freshNumber();
    await sendAndCheck(to);
    // A sequence block over its thousand (the number is of it).
    expect((await sequentialRun()).slice(0, -3)).toBe(to.slice(0, -3));
    requests.length = 0;
    expect(await sendsEvery2Minutes(to, 3)).toEqual([201, 201, 403]);
    // The first send: no request more than a refusal's. (The earlier send's delivery runs beside: Get and Update.)
    expectReadAgainWithLastSends();
    const items = await harness.scanTable();
    const passed = items
      .filter((item) => item.type === 'verification' && item.to === to)
      .sort((a, b) => String(a.date_created).localeCompare(String(b.date_created)))
      .map((item) => (item.guard as { mode: string } | undefined)?.mode);
    // The first, before the block, maybe shadow (the other tests' runs in GLOBAL); the two passes, known.
    expect(passed).toHaveLength(3);
    expect(passed.slice(1)).toEqual(['known', 'known']);
    const number = items.find((item) => item.pk === `NUMBER#${to}` && item.sk === 'NUMBER')!;
    expect(number.guard).toMatchObject({ mode: 'blocked', reason: 'sequential_numbers' });
    // Kept as long as its last sends can make it known: 7 days and a day past the newest.
    const newest = harness.clock.now().getTime() - 2 * 60_000;
    expect(number.ttl).toBe(Math.floor((newest + 7 * 86_400_000) / 1000) + 86_400);
  });

  it('passes twice at most under simultaneous sends: the stored verifications say so, not only the answers', async () => {
    const to = freshNumber();
    await sendAndCheck(to);
    await sequentialRun();
    // Past the burst window of the first send: the per-number limit lets three through.
    harness.clock.advance(6 * 60_000);
    // Three at once: each reads the same log; its version
    // orders them, and each one decided again reads the last sends again.
    const statuses = await Promise.all([0, 1, 2].map(() => api.send({ To: to }).then((r) => r.status)));
    expect(statuses.sort()).toEqual([201, 201, 403]);
    const items = await harness.scanTable();
    const modes = items
      .filter((item) => item.type === 'verification' && item.to === to)
      .map((item) => (item.guard as { mode: string } | undefined)?.mode);
    expect(modes.filter((mode) => mode === 'known')).toHaveLength(2);
    expect(modes).toHaveLength(3);
  });

  it('at shadow, a send a learnt block would refuse reads its last sends too: recorded known, as standard would pass it', async () => {
    const to = freshNumber();
    await sendAndCheck(to);
    await sequentialRun();
    const stranger = (() => {
      const start = harness.clock.now().getTime();
      for (let n = Number(to.slice(1)) + 1; ; n++)
        if ([0, 10].every((m) => !isProbe(`+${n}`, start + m * 60_000))) return `+${n}`;
    })();
    expect(await admin('guard', 'level', account.serviceSid, 'shadow')).toMatchObject({ level: 'shadow' });
    requests.length = 0;
    expect(await sendsEvery2Minutes(to, 1)).toEqual([201]);
    expectReadAgainWithLastSends();
    // A number the service never sent to: nothing to read, one read as before, recorded shadow.
    harness.clock.advance(1000);
    requests.length = 0;
    expect((await api.send({ To: stranger })).status).toBe(201);
    expect(requests.filter((r) => r.command === 'BatchGetItemCommand')).toHaveLength(1);
    const modes = (await harness.scanTable())
      .filter((item) => item.type === 'verification' && (item.to === to || item.to === stranger))
      .sort((a, b) => String(a.date_created).localeCompare(String(b.date_created)))
      .map((item) => [item.to, (item.guard as { mode: string } | undefined)?.mode]);
    expect(modes.slice(1)).toEqual([
      [to, 'known'],
      [stranger, 'shadow'],
    ]);
  });

  it("another service's checked code makes it known to that service only", async () => {
    const to = freshNumber();
    const other = await harness.createAccount();
    await sendAndCheck(to, harness.client(other));
    await sequentialRun();
    expect(await sendsEvery2Minutes(to, 1)).toEqual([403]);
  });
});

describe('npm run admin -- guard', () => {
  it('level, safe list, report and unblock change what the send answers', async () => {
    const to = await sequentialRun();
    expect(await admin('guard', 'level', account.serviceSid, 'shadow')).toMatchObject({ level: 'shadow' });
    expect((await api.send({ To: to })).status).toBe(201);

    // Two minutes between sends to the number: its burst limit (3 in 5 minutes) stays out of the way.
    harness.clock.advance(120_000);
    await admin('guard', 'level', account.serviceSid, 'standard');
    expect((await api.send({ To: to })).status).toBe(403);
    harness.clock.advance(120_000);
    await admin('guard', 'safelist', 'add', account.serviceSid, to);
    expect((await api.send({ To: to })).status).toBe(201);
    expect(await admin('guard', 'safelist', 'remove', account.serviceSid, to)).toMatchObject({
      safeList: [],
    });

    const report = await admin('guard', 'report', account.serviceSid);
    expect(report.level).toBe('standard');
    expect(report.blocks).toEqual(
      expect.arrayContaining([expect.objectContaining({ scope: 'service', reason: 'sequential_numbers' })]),
    );

    // The run's thousand and, the run being long, the ten thousand around it: both cover the prefix.
    const lifted = await admin('guard', 'unblock', account.serviceSid, to.slice(0, -3));
    expect(lifted.lifted).toBe(2);
    harness.clock.advance(120_000);
    expect((await api.send({ To: to })).status).toBe(201);
  });
});
