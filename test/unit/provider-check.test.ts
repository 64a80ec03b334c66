/**
 * The deliver function's side of the post-deploy check: its event (no code, nothing that could send), the
 * handler's dispatch, AWS SMS's dry runs paced to DryRun's rate, and Vonage's offline checks (the key parses
 * and signs, the id is a UUID).
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { awsSmsChecker, vonageChecker } from '../../functions/adapters/providers/check';
import { PROVIDER_CHECK_KIND } from '../../functions/core/provider-check';
import { isProviderCheckEvent, readCheckEvent } from '../../functions/wiring/provider-check';
import { handler } from '../../functions/entries/deliver';

const privateKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

describe('the check event', () => {
  test('names its kind; a delivery step’s input is no check event', () => {
    expect(isProviderCheckEvent({ kind: PROVIDER_CHECK_KIND })).toBe(true);
    expect(isProviderCheckEvent({ sid: 'VE0123', channelIndex: 0 })).toBe(false);
    expect(isProviderCheckEvent(undefined)).toBe(false);
  });

  test('takes an E.164 number per country, and countries to continue with', () => {
    expect(
      readCheckEvent({
        kind: PROVIDER_CHECK_KIND,
        to: { IN: '+918123456789', US: '+14155550100' },
        countries: ['IN'],
      }),
    ).toEqual({ to: { IN: '+918123456789', US: '+14155550100' }, countries: ['IN'] });
  });

  test.each([
    ['a code', { code: '123456' }, /unknown fields: code/],
    ['a message body', { body: 'Your code is 1' }, /unknown fields: body/],
    ['a delivery step’s fields', { sid: 'VE1', channelIndex: 0 }, /unknown fields: sid, channelIndex/],
    ['a number not in E.164', { to: { GB: '0044 7400 123456' } }, /Not an E.164 number/],
    ['a list of numbers', { to: ['+447400123456'] }, /must map countries/],
    ['a country not ISO', { countries: ['India'] }, /ISO country codes/],
  ])('refuses %s', (_name, extra, message) => {
    expect(() => readCheckEvent({ kind: PROVIDER_CHECK_KIND, ...extra })).toThrow(message);
  });
});

describe('Vonage, checked without calling Vonage', () => {
  const credentials =
    (over: Partial<{ applicationId: string; privateKey: string }> = {}) =>
    () =>
      Promise.resolve({ applicationId: randomUUID(), privateKey, signatureSecret: 'x'.repeat(32), ...over });

  test('a sound secret and a sender pass', async () => {
    const outcomes = await vonageChecker(credentials(), { viber: '16273' }).check({ channel: 'viber' });
    expect(outcomes.map((outcome) => [outcome.check, outcome.ok])).toEqual([
      ['application id', true],
      ['private key', true],
      ['signature secret', true],
      ['sender', true],
    ]);
  });

  test('a key that does not parse, an id that is no UUID, a channel without sender: each fails on its own', async () => {
    const outcomes = await vonageChecker(
      credentials({ applicationId: 'my-app', privateKey: '-----BEGIN PRIVATE KEY-----\nnot a key' }),
      {},
    ).check({ channel: 'sms' });
    expect(outcomes.filter((outcome) => !outcome.ok).map((outcome) => outcome.check)).toEqual([
      'application id',
      'private key',
      'sender',
    ]);
    // The key's text is never echoed.
    expect(JSON.stringify(outcomes)).not.toContain('not a key');
  });

  test('a secret the function cannot read fails with its error', async () => {
    const outcomes = await vonageChecker(
      () => Promise.reject(Object.assign(new Error('no access'), { name: 'AccessDeniedException' })),
      { sms: 'Acme' },
    ).check({ channel: 'sms' });
    expect(outcomes[0]).toEqual({ check: 'secret', ok: false, detail: 'AccessDeniedException: no access' });
  });
});

test('the deliver handler answers a check event with a report, with no table, key or workflow to reach', async () => {
  // No OTP_PROVIDERS: every channel on the simulated carrier, which has nothing to check.
  const report = await handler({ kind: PROVIDER_CHECK_KIND } as never);
  expect(report).toMatchObject({ kind: PROVIDER_CHECK_KIND, rows: [], remaining: [] });
  expect((report as { notChecked: unknown[] }).notChecked).toHaveLength(5);
  await expect(handler({ kind: PROVIDER_CHECK_KIND, code: '123456' } as never)).rejects.toThrow(
    /unknown fields: code/,
  );
});

describe('AWS SMS dry runs, paced to DryRun’s rate', () => {
  /** A clock that only moves when waited on, and a provider that notes when each dry run reached it. */
  function fixture(throttleFirst = 0) {
    let now = 1_000_000;
    const calls: number[] = [];
    const clock = {
      now: () => new Date(now),
      sleep: (ms: number) => {
        now += ms;
        return Promise.resolve();
      },
    };
    const provider = {
      hasRegisteredTemplate: () => true,
      dryRun: () => {
        calls.push(now);
        if (calls.length <= throttleFirst)
          return Promise.reject(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
        return Promise.resolve('message-id');
      },
    };
    return { calls, checker: awsSmsChecker(provider, clock) };
  }

  test('one every 250 ms: under the five a second AWS allows', async () => {
    const { calls, checker } = fixture();
    for (const country of ['US', 'GB', 'DE', 'IN'])
      expect(await checker.check({ channel: 'sms', country, to: '+14155550100' })).toEqual([
        expect.objectContaining({ check: 'DryRun SendTextMessage', ok: true }),
      ]);
    expect(calls.slice(1).map((at, i) => at - calls[i]!)).toEqual([250, 250, 250]);
  });

  test('a throttled dry run is tried once more, a second later', async () => {
    const { calls, checker } = fixture(1);
    const [outcome] = await checker.check({ channel: 'sms', country: 'US', to: '+14155550100' });
    expect(outcome).toMatchObject({ ok: true });
    expect(calls[1]! - calls[0]!).toBe(1_000);
  });

  test('throttled twice, the country fails with AWS’s error', async () => {
    const { calls, checker } = fixture(2);
    const [outcome] = await checker.check({ channel: 'sms', country: 'US', to: '+14155550100' });
    expect(outcome).toMatchObject({
      ok: false,
      detail: 'to +14155550100: ThrottlingException: Rate exceeded',
    });
    expect(calls).toHaveLength(2);
  });
});
