/**
 * What the guard tells the owner, end to end on the local stack. The per-country caps: set with the admin command
 * and the console API, read by the guard's consumer (on the table's stream, as on AWS) with the service item, a
 * country's sends refused once its cap is reached (403 blocked_by_policy), and the owner told once per cap window:
 * the `GuardCapsReached` metric, a `guard.cap_reached` webhook, and the console's caps page. A conversion drop: a
 * `guard.conversion_drop` webhook once, the console's guard page and the admin report.
 */
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { DynamoGuardStore } from '../../functions/adapters/dynamodb/guard';
import type { GuardEvent } from '../../functions/core/guard/aggregates';
import { consumeGuardEvents } from '../../functions/core/guard/consumer';
import { InMemoryMetrics, METRIC } from '../../functions/core/metrics';
import type { WebhookPost } from '../../local/webhooks';
import { adminJson, runAdminCommand } from '../support/admin-cli';
import { dynamoEndpoint, eventually, startHarness, type Account, type Harness } from '../support/harness';

const HOUR = 3_600_000;
let harness: Harness;
const metrics = new InMemoryMetrics();

beforeAll(async () => {
  harness = await startHarness({ guardConsumer: { intervalMs: 50 }, metrics });
  // Far from the end of an hour: the hourly cap's window must not turn over during the test.
  const into = harness.clock.now().getTime() % HOUR;
  if (into > HOUR - 15 * 60_000) harness.clock.advance(HOUR - into + 60_000);
});
afterAll(() => harness.close());

const admin = (...args: string[]) => runAdminCommand([...args, '--json'], harness);
const adminOut = (...args: string[]) => adminJson(args, harness);

const operatorToken = () => harness.consoleToken('ops@example.com', true);

async function consoleCall(method: string, path: string, body?: unknown) {
  const response = await fetch(`${harness.stack.url}/console/api${path}`, {
    method,
    headers: {
      authorization: `Bearer ${await operatorToken()}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const posts = (account: Account, eventType: string): WebhookPost[] =>
  harness.stack.webhooks.transport.posts.filter(
    (post) =>
      post.eventType === eventType &&
      (post.payload as { data: { service_sid: string } }).data.service_sid === account.serviceSid,
  );
const capPosts = (account: Account) => posts(account, 'guard.cap_reached');

let counter = 0;
/** GB mobiles in ranges of their own (no sequence, no shared range). */
const gbMobile = () => `+4474${String(10 + ++counter * 7).padStart(2, '0')}${String(123_456 + counter * 37)}`;

describe('npm run admin -- guard caps', () => {
  test('set, change, show and clear caps; bad values are usage errors that change nothing', async () => {
    const { serviceSid } = await harness.createAccount();
    expect(await adminOut('guard', 'caps', serviceSid)).toEqual({ serviceSid, caps: [], reached: [] });
    const set = await adminOut(
      'guard',
      'cap',
      'set',
      serviceSid,
      'gb',
      '--hourly-sends',
      '500',
      '--daily-spend',
      '25.5',
    );
    expect(set.caps).toEqual([
      { country: 'GB', hourlySends: 500, dailySends: null, hourlySpend: null, dailySpend: '25.5000' },
    ]);
    expect((await harness.accounts.getService(serviceSid))?.guard?.caps).toEqual({
      GB: { hourlySends: 500, dailySpend: 255_000 },
    });
    // The default for every other country, listed last; one cap of GB removed, the other kept.
    await adminOut('guard', 'cap', 'set', serviceSid, '*', '--daily-sends', '1000');
    const changed = await adminOut('guard', 'cap', 'set', serviceSid, 'GB', '--hourly-sends', 'off');
    expect(changed.caps).toEqual([
      { country: 'GB', hourlySends: null, dailySends: null, hourlySpend: null, dailySpend: '25.5000' },
      { country: '*', hourlySends: null, dailySends: 1000, hourlySpend: null, dailySpend: null },
    ]);

    for (const bad of [
      ['GB', '--hourly-sends', '0'],
      ['GB', '--hourly-sends', '1.5'],
      ['GB', '--daily-spend', 'lots'],
      ['ZZ', '--daily-sends', '10'],
      ['GB'],
    ]) {
      const run = await admin('guard', 'cap', 'set', serviceSid, ...bad);
      expect([bad, run.code]).toEqual([bad, 2]);
      expect(run.stderr).toMatch(/^admin: /);
    }
    expect((await harness.accounts.getService(serviceSid))?.guard?.caps).toEqual({
      GB: { dailySpend: 255_000 },
      '*': { dailySends: 1000 },
    });

    expect((await adminOut('guard', 'cap', 'clear', serviceSid, 'GB')).caps).toEqual([
      expect.objectContaining({ country: '*' }),
    ]);
    await adminOut('guard', 'cap', 'clear', serviceSid, '*');
    // None left: the attribute is gone, as on a service that never had caps.
    expect((await harness.accounts.getService(serviceSid))?.guard?.caps).toBeUndefined();
  });
});

describe('a cap reached', () => {
  test('refuses the country (403) a moment after, tells the owner once: metric, webhook, console', async () => {
    const account = await harness.createAccount();
    const api = harness.client(account);
    await adminOut('webhook', 'add', account.serviceSid, `${harness.stack.url}/_local/webhooks/receiver`);
    await adminOut('guard', 'cap', 'set', account.serviceSid, 'GB', '--hourly-sends', '3');

    for (let i = 0; i < 3; i++) expect((await api.send({ To: gbMobile() })).status).toBe(201);
    // The consumer folds the sends off the request path: the cap acts a moment later.
    const refused = await eventually(async () => {
      const answer = await api.send({ To: gbMobile() });
      return answer.status === 403 ? answer : undefined;
    }, 10_000);
    expect(refused.body).toMatchObject({ code: 'blocked_by_policy' });
    expect(String(refused.body.message)).toContain('send limit');
    // Other countries are not capped.
    expect((await api.send({ To: '+4915123456789' })).status).toBe(201);

    const [post] = await eventually(async () => {
      const found = capPosts(account).filter((p) => p.response && 'status' in p.response);
      return found.length > 0 ? found : undefined;
    }, 10_000);
    expect(post!.payload).toMatchObject({
      id: expect.stringMatching(/^EV[0-9a-f]{32}$/),
      type: 'guard.cap_reached',
      data: { service_sid: account.serviceSid, country: 'GB', cap: 'hourly_sends', limit: 3 },
    });
    // The cap reads the consumer's aggregates, seconds behind the sends: a send or two more may pass first.
    const sentPastCap = (post!.payload as { data: { value: number } }).data.value;
    expect(sentPastCap).toBeGreaterThanOrEqual(3);
    const until = (post!.payload as { data: { refused_until: string } }).data.refused_until;
    expect(Date.parse(until) % HOUR).toBe(0);
    expect(post!.signature).toBe('valid');
    expect(metrics.total(METRIC.guardCapsReached, { cap: 'hourly_sends' })).toBe(1);

    // More refused sends: the consumer writes the country's state again, with the same block: no new event.
    for (let i = 0; i < 3; i++) expect((await api.send({ To: gbMobile() })).status).toBe(403);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(capPosts(account)).toHaveLength(1);
    expect(metrics.total(METRIC.guardCapsReached, { cap: 'hourly_sends' })).toBe(1);

    // The console and the admin command show it.
    const caps = await consoleCall('GET', `/services/${account.serviceSid}/caps`);
    expect(caps.body.reached).toEqual([
      {
        country: 'GB',
        cap: 'hourly_sends',
        limit: 3,
        value: expect.any(Number),
        since: expect.any(String),
        until,
      },
    ]);
    expect((caps.body.reached as { value: number }[])[0]!.value).toBeGreaterThanOrEqual(sentPastCap);
    expect((await adminOut('guard', 'caps', account.serviceSid)).reached).toEqual(caps.body.reached);
  });
});

describe('the console API', () => {
  test('shows and sets one country at a time; bad input is a 400 invalid_parameter that changes nothing', async () => {
    const { serviceSid } = await harness.createAccount();
    const shown = await consoleCall('GET', `/services/${serviceSid}/caps`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ caps: [], reached: [] });
    expect(shown.body.servedCountries).toContain('GB');

    const set = await consoleCall('PUT', `/services/${serviceSid}/caps/gb`, {
      hourlySends: 100,
      dailySpend: '12.5',
    });
    expect(set.status).toBe(200);
    expect(set.body.caps).toEqual([
      { country: 'GB', hourlySends: 100, dailySends: null, hourlySpend: null, dailySpend: '12.5000' },
    ]);
    await consoleCall('PUT', `/services/${serviceSid}/caps/*`, { dailySends: 2000 });
    expect((await harness.accounts.getService(serviceSid))?.guard?.caps).toEqual({
      GB: { hourlySends: 100, dailySpend: 125_000 },
      '*': { dailySends: 2000 },
    });

    for (const [path, body] of [
      ['GB', { hourlySends: 0 }],
      ['GB', { hourlySends: 2.5 }],
      ['GB', { hourlySends: '100' }],
      ['GB', { dailySpend: '-1' }],
      ['ZZ', { hourlySends: 10 }],
    ] as const) {
      const answer = await consoleCall('PUT', `/services/${serviceSid}/caps/${path}`, body);
      expect([path, body, answer.status, answer.body.code]).toEqual([path, body, 400, 'invalid_parameter']);
    }
    expect((await harness.accounts.getService(serviceSid))?.guard?.caps?.GB).toEqual({
      hourlySends: 100,
      dailySpend: 125_000,
    });

    // Every cap of a country null (or left out): the country's entry is removed.
    const cleared = await consoleCall('PUT', `/services/${serviceSid}/caps/GB`, { hourlySends: null });
    expect(cleared.body.caps).toEqual([expect.objectContaining({ country: '*' })]);
  });

  test('countries saved at the same time are all kept, each with its audit record', async () => {
    const { serviceSid } = await harness.createAccount();
    const countries = ['US', 'GB', 'FR', 'DE', 'ES', 'IT', 'NL', 'PL'];
    const answers = await Promise.all(
      countries.map((country, i) =>
        consoleCall('PUT', `/services/${serviceSid}/caps/${country}`, { hourlySends: 100 + i }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(countries.map(() => 200));
    expect((await harness.accounts.getService(serviceSid))?.guard?.caps).toEqual(
      Object.fromEntries(countries.map((country, i) => [country, { hourlySends: 100 + i }])),
    );
    // The admin command keeps the caps it does not name, and the console's at the same time.
    await Promise.all([
      admin('guard', 'cap', 'set', serviceSid, 'US', '--daily-sends', '900'),
      consoleCall('PUT', `/services/${serviceSid}/caps/SE`, { dailySends: 50 }),
    ]);
    const caps = (await harness.accounts.getService(serviceSid))?.guard?.caps;
    expect([caps?.US, caps?.SE, Object.keys(caps ?? {}).length]).toEqual([
      { hourlySends: 100, dailySends: 900 },
      { dailySends: 50 },
      countries.length + 1,
    ]);
    const records = await harness.accounts.auditTrail(serviceSid);
    expect(records.filter((record) => record.action === 'guard.caps')).toHaveLength(countries.length + 2);
  });
});

describe('a conversion drop', () => {
  const MINUTE = 60_000;
  /**
   * `count` sends of `account` to GB mobiles over its ranges, from `from` to `to` minutes ago, those `unchecked`
   * without their code checked, as the guard's consumer reads them off the stream.
   */
  const traffic = (
    account: Account,
    count: number,
    from: number,
    to: number,
    unchecked: (i: number) => boolean,
  ) => {
    const now = harness.clock.now().getTime();
    return Array.from({ length: count }, (_, i): GuardEvent[] => {
      const at = now - from * MINUTE + Math.floor(((from - to) * MINUTE * i) / count);
      const e164 = `+4474${String((i % 40) * 1_000_000 + i * 7_919 + (unchecked(i) ? 500_000 : 0)).padStart(8, '0')}`;
      const send = { serviceSid: account.serviceSid, e164, country: 'GB', at };
      return unchecked(i)
        ? [{ kind: 'send', ...send, accepted: true }]
        : [
            { kind: 'send', ...send, accepted: true },
            { kind: 'conversion', ...send, at: at + 30_000, sentAt: at, flagged: false },
          ];
    }).flat();
  };

  test('tells the owner once: a guard.conversion_drop webhook, the guard page, the admin report', async () => {
    const account = await harness.createAccount();
    await adminOut('webhook', 'add', account.serviceSid, `${harness.stack.url}/_local/webhooks/receiver`);
    // The consumer's own fold (the stream's records are at most an hour old): yesterday 4 codes in 5 were
    // checked; the last hour, 32 of 100.
    const documents = createDocumentClient({ endpoint: dynamoEndpoint() });
    const consume = (events: GuardEvent[]) =>
      consumeGuardEvents(
        { store: new DynamoGuardStore(documents, harness.tableName), clock: harness.clock },
        events.sort((a, b) => a.at - b.at),
      );
    await consume(traffic(account, 200, 25 * 60, 20 * 60, (i) => i % 5 === 0));
    await consume([
      ...traffic(account, 40, 58, 4, (i) => i % 5 === 0),
      ...traffic(account, 60, 58, 4, () => true).map((e) => ({
        ...e,
        e164: e.e164.replace('+4474', '+4475'),
      })),
    ]);

    const [post] = await eventually(async () => {
      const found = posts(account, 'guard.conversion_drop').filter(
        (p) => p.response && 'status' in p.response,
      );
      return found.length > 0 ? found : undefined;
    }, 10_000);
    expect(post!.payload).toEqual({
      id: expect.stringMatching(/^EV[0-9a-f]{32}$/),
      type: 'guard.conversion_drop',
      created_at: harness.clock.now().toISOString(),
      data: {
        service_sid: account.serviceSid,
        country: 'GB',
        codes_sent: 100,
        codes_checked: 32,
        conversion: 0.32,
        usual_conversion: 0.8,
        ranges: 'all',
      },
    });
    expect(post!.signature).toBe('valid');

    // A minute on, a burst of unchecked codes: the state is written again (a block of the burst) with the same
    // drop, and no new event.
    harness.clock.advance(MINUTE);
    await consume(
      traffic(account, 10, 1, 0, () => true).map((e) => ({ ...e, e164: e.e164.replace('+4474', '+4476') })),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(posts(account, 'guard.conversion_drop')).toHaveLength(1);
    documents.destroy();

    const page = await consoleCall('GET', `/services/${account.serviceSid}/guard`);
    expect(page.body.conversionDrops).toEqual([
      {
        country: 'GB',
        at: (post!.payload as { created_at: string }).created_at,
        codesSent: 100,
        codesChecked: 32,
        usualConversion: 0.8,
        ranges: 'all',
      },
    ]);
    expect(page.body.blocks).toEqual([expect.objectContaining({ reason: 'country_surge' })]);
    const report = await adminOut('guard', 'report', account.serviceSid);
    expect(report.conversionDrops).toEqual([
      expect.objectContaining({ country: 'GB', figures: expect.objectContaining({ checked_60m: 32 }) }),
    ]);
  });
});
