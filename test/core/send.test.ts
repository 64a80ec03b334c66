/** Send through the core with the memory store and a fake clock. */
import { CryptoCodeVault } from '../../functions/adapters/crypto';
import { deferredKeyRing, masterKeyRing, type KeyRing } from '../../functions/adapters/keyring';
import { MemoryStore } from '../../functions/adapters/memory/store';
import { OtpError } from '../../functions/core/errors';
import type { ErrorCode } from '../../functions/core/errors';
import type { Service } from '../../functions/core/model';
import { CHANNELS, type Channel } from '../../functions/core/routing';
import { sendVerification } from '../../functions/core/send';
import { STALL_SECONDS, restartStalledDeliveries } from '../../functions/core/sweeper';
import { T0, UK_MOBILE, coreWorld, type CoreWorld } from '../support/core-world';

let world: CoreWorld;
beforeEach(() => {
  world = coreWorld();
});

const refusal = async (promise: Promise<unknown>): Promise<ErrorCode> => {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OtpError) return error.code;
    throw error;
  }
  throw new Error('The send was accepted');
};

const sendsLogged = async (e164 = UK_MOBILE) => (await world.store.getNumber(e164)).sends.length;

describe('an accepted send', () => {
  it('charges the price once, stores the code as an HMAC and a sealed copy, and starts delivery', async () => {
    const service = world.addService({ balance: 1000 });
    world.random.codes.push('042917');
    const result = await world.send({ serviceSid: service.sid, to: '+44 7400 123-456' });

    expect(result.replayed).toBe(false);
    expect(result.deliveryStarted).toBe(true);
    const sid = result.verification.sid;
    expect(result.verification).toEqual({
      sid,
      to: UK_MOBILE,
      status: 'PENDING',
      delivery_status: 'PENDING',
      channel: 'sna',
      price: '0.0600',
      price_unit: 'USD',
      attempts_remaining: 5,
      expires_at: new Date(T0.getTime() + 300_000).toISOString(),
      date_created: T0.toISOString(),
    });
    expect(world.store.getService(service.sid)?.balance).toBe(400);
    expect(world.store.charges(service.sid)).toEqual([
      { serviceSid: service.sid, verificationSid: sid, amount: 600, at: T0.toISOString() },
    ]);
    const stored = await world.store.getVerification(sid);
    expect(stored?.codeHash).toBe(world.vault.hash(sid, '042917'));
    expect(world.vault.open(sid, stored!.sealedCode!)).toBe('042917');
    expect(stored?.channels).toEqual(['sna', 'viber', 'whatsapp', 'rcs', 'sms']);
    // The country picks per-country providers at delivery, which does not parse the number again.
    expect(stored?.country).toBe('GB');
    expect(world.workflow.started).toEqual([{ sid, waitSeconds: 8 }]);
  });

  it('is answered even when the workflow cannot start; the sweeper restarts it from the ledger', async () => {
    const service = world.addService();
    world.workflow.failing = true;
    const result = await world.send({ serviceSid: service.sid });
    expect(result.deliveryStarted).toBe(false);
    expect(world.store.charges(service.sid)).toHaveLength(1);
    expect(await world.store.listAcceptedSends([{ from: T0, to: T0 }])).toEqual([
      [{ sid: result.verification.sid, at: T0.toISOString() }],
    ]);
    world.workflow.failing = false;
    world.clock.advance(STALL_SECONDS * 1000);
    const sweeper = { ...world.deliveryDeps, store: world.store, workflow: world.workflow };
    expect(await restartStalledDeliveries(sweeper)).toEqual([result.verification.sid]);
  });

  it('is answered when the workflow start outlasts the time left: 201, charged, left to the sweeper', async () => {
    const service = world.addService();
    const never = new Promise<void>(() => {});
    world.workflow.start = () => never;
    const result = await world.send({ serviceSid: service.sid, timeLeftMs: () => 20 });
    expect(result.deliveryStarted).toBe(false);
    expect(world.store.charges(service.sid)).toHaveLength(1);
  });

  it('with no time left to settle a charge, refuses 503 before writing: nothing charged or counted', async () => {
    const service = world.addService();
    const code = await refusal(world.send({ serviceSid: service.sid, timeLeftMs: () => 0 }));
    expect(code).toBe('service_unavailable');
    expect(world.store.charges(service.sid)).toEqual([]);
    expect(await sendsLogged()).toBe(0);
  });

  it('takes a caller-supplied code: no hash (never checked), sealed for delivery', async () => {
    const service = world.addService();
    const { verification } = await world.send({ serviceSid: service.sid, code: 'AB12cd' });
    const stored = await world.store.getVerification(verification.sid);
    expect(stored?.clientCode).toBe(true);
    expect(stored?.codeHash).toBeUndefined();
    expect(world.vault.open(verification.sid, stored!.sealedCode!)).toBe('AB12cd');
  });
});

describe('refusals, in the order of the spec', () => {
  it.each<[string, ErrorCode, boolean, (s: Service) => Partial<Service>, string]>([
    ['no such number', 'unroutable', false, () => ({}), '+44 12'],
    ['a country not served', 'unroutable', false, () => ({}), '+81 90 1234 5678'],
    ['no default template', 'no_default_template', false, () => ({ defaultTemplate: undefined }), UK_MOBILE],
    [
      'a blocked country',
      'blocked_by_policy',
      true,
      () => ({ rules: { blockedCountries: ['GB'], blockedPrefixes: [] } }),
      UK_MOBILE,
    ],
    [
      'a blocked prefix',
      'blocked_by_policy',
      true,
      () => ({ rules: { blockedCountries: [], blockedPrefixes: ['+447400'] } }),
      UK_MOBILE,
    ],
    [
      'no enabled channel reaches a landline',
      'no_eligible_channel',
      true,
      () => ({ enabledChannels: ['sna'] }),
      '+44 20 7946 0958',
    ],
    ['no price for the country', 'not_priceable', true, () => ({}), '+53 5 1234567'],
    ['a balance below the price', 'insufficient_funds', true, () => ({ balance: 599 }), UK_MOBILE],
  ])('%s: %s (counted against the number: %s)', async (_, code, counted, changes, to) => {
    const service = world.addService();
    world.store.putService({ ...service, ...changes(service) });
    expect(await refusal(world.send({ serviceSid: service.sid, to }))).toBe(code);
    const e164 = to.replace(/[^+\d]/g, '');
    expect(await sendsLogged(e164)).toBe(counted ? 1 : 0);
    expect(world.store.charges(service.sid)).toEqual([]);
    expect(world.workflow.started).toEqual([]);
  });

  it('refuses a deleted service (forbidden) and an unknown template', async () => {
    expect(await refusal(world.send({ serviceSid: 'VA' + 'f'.repeat(32) }))).toBe('forbidden');
    const service = world.addService();
    expect(await refusal(world.send({ serviceSid: service.sid, templateSid: 'HX' + 'e'.repeat(32) }))).toBe(
      'unknown_template',
    );
    expect(await sendsLogged()).toBe(0);
    // `HJ…` SIDs are another provider's format: ignored, the default template is used.
    const accepted = await world.send({ serviceSid: service.sid, templateSid: 'HJ' + 'e'.repeat(32) });
    expect(accepted.verification.status).toBe('PENDING');
  });

  it('uses a template of the service when asked for one', async () => {
    const service = world.addService();
    const template = { sid: world.random.sid('HX'), body: 'Votre code : {code}', locale: 'fr' };
    world.store.putTemplate(service.sid, template);
    const { verification } = await world.send({ serviceSid: service.sid, templateSid: template.sid });
    expect((await world.store.getVerification(verification.sid))?.message).toBe('Votre code : {code}');
  });

  it('checks policy before channels, channels before price, price before the limits and the balance', async () => {
    // Everything is wrong at once; each fix reveals the next refusal.
    const service = world.addService({
      balance: 0,
      enabledChannels: ['sna'],
      rules: { blockedCountries: ['CU'], blockedPrefixes: [] },
    });
    const cuba = '+53 5 1234567';
    expect(await refusal(world.send({ serviceSid: service.sid, to: cuba }))).toBe('blocked_by_policy');
    world.store.putService({ ...service, rules: { blockedCountries: [], blockedPrefixes: [] } });
    expect(await refusal(world.send({ serviceSid: service.sid, to: cuba }))).toBe('no_eligible_channel');
    world.store.putService({
      ...service,
      rules: { blockedCountries: [], blockedPrefixes: [] },
      enabledChannels: ['sms'],
    });
    expect(await refusal(world.send({ serviceSid: service.sid, to: cuba }))).toBe('not_priceable');
    world.store.putService({
      ...service,
      rules: { blockedCountries: [], blockedPrefixes: [] },
      enabledChannels: ['sms'],
      prices: { CU: 1000 },
    });
    // The three refusals so far were counted: the burst limit (3 in 5 minutes) comes before the balance.
    expect(await refusal(world.send({ serviceSid: service.sid, to: cuba }))).toBe('burst');
    world.clock.advance(301_000);
    expect(await refusal(world.send({ serviceSid: service.sid, to: cuba }))).toBe('insufficient_funds');
  });

  it('unreachable comes before burst, burst before rate_limited, rate_limited before the balance', async () => {
    const poor = world.addService({ balance: 0 });
    const rich = world.addService();
    const until = new Date(T0.getTime() + 2 * 86_400_000);
    // Ten refused sends within the hour, the last three in the last five minutes.
    const times = [0, 301, 602, 903, 1204, 1505, 1806, 2200, 2201, 2202];
    for (const seconds of times) {
      world.clock.set(new Date(T0.getTime() + seconds * 1000));
      expect(await refusal(world.send({ serviceSid: poor.sid }))).toBe('insufficient_funds');
    }
    world.clock.set(new Date(T0.getTime() + 2203_000));
    expect(await sendsLogged()).toBe(10);
    await world.store.recordRejections(UK_MOBILE, [...CHANNELS], until);
    expect(await refusal(world.send({ serviceSid: rich.sid }))).toBe('unreachable');
    await world.store.recordRejections(UK_MOBILE, [...CHANNELS], T0);
    expect(await refusal(world.send({ serviceSid: rich.sid }))).toBe('burst');
    world.clock.advance(301_000);
    expect(await refusal(world.send({ serviceSid: rich.sid }))).toBe('rate_limited');
  });
});

describe('the per-number limits', () => {
  it('count refused sends from any account: three refused sends make the fourth, funded one a burst', async () => {
    const poor = world.addService({ balance: 0 });
    const rich = world.addService();
    for (let i = 0; i < 3; i++)
      expect(await refusal(world.send({ serviceSid: poor.sid }))).toBe('insufficient_funds');
    expect(await refusal(world.send({ serviceSid: rich.sid }))).toBe('burst');
    expect(world.store.charges(rich.sid)).toEqual([]);
    expect(await sendsLogged()).toBe(4);
    // After the burst window, sends are accepted again until the hourly limit.
    world.clock.advance(300_001);
    await world.send({ serviceSid: rich.sid });
  });

  it('lets the 3rd send in the burst window through and refuses the 4th; the 11th in an hour is rate_limited', async () => {
    const service = world.addService();
    for (let i = 0; i < 3; i++) await world.send({ serviceSid: service.sid });
    expect(await refusal(world.send({ serviceSid: service.sid }))).toBe('burst');
    for (let burst = 1; burst <= 2; burst++) {
      world.clock.advance(300_001);
      for (let i = 0; i < 3; i++) await world.send({ serviceSid: service.sid });
    }
    // 9 accepted and 1 refused in the hour: the 11th send is refused whatever its burst window says.
    world.clock.advance(300_001);
    expect(await refusal(world.send({ serviceSid: service.sid }))).toBe('rate_limited');
    expect(world.store.charges(service.sid)).toHaveLength(9);
  });

  it('hold under simultaneous sends: exactly three of six are accepted', async () => {
    const service = world.addService();
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => world.send({ serviceSid: service.sid })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as OtpError).code] : []));
    expect(refused).toEqual(['burst', 'burst', 'burst']);
    expect(world.store.charges(service.sid)).toHaveLength(3);
  });
});

describe('unreachable, per channel', () => {
  const reject = (channels: Channel[], days = 30) =>
    world.store.recordRejections(UK_MOBILE, channels, new Date(T0.getTime() + days * 86_400_000));

  it('leaves channels that rejected the number out of the plan', async () => {
    const service = world.addService();
    await reject(['sna', 'viber']);
    const { verification } = await world.send({ serviceSid: service.sid });
    expect(verification.channel).toBe('whatsapp');
    expect((await world.store.getVerification(verification.sid))?.channels).toEqual([
      'whatsapp',
      'rcs',
      'sms',
    ]);
  });

  it("refuses only when every channel of this service's plan rejected it, until the rejections end", async () => {
    const snaOnly = world.addService({ enabledChannels: ['sna', 'viber'] });
    const smsToo = world.addService({ enabledChannels: ['sna', 'sms'] });
    await reject(['sna', 'viber'], 1);
    expect(await refusal(world.send({ serviceSid: snaOnly.sid }))).toBe('unreachable');
    const { verification } = await world.send({ serviceSid: smsToo.sid });
    expect(verification.channel).toBe('sms');
    world.clock.set(new Date(T0.getTime() + 86_400_000 + 1));
    expect((await world.send({ serviceSid: snaOnly.sid })).verification.channel).toBe('sna');
  });
});

describe('Idempotency-Key', () => {
  it('replays the accepted send with its current state: nothing sent or charged again', async () => {
    const service = world.addService();
    const first = await world.send({ serviceSid: service.sid, idempotencyKey: 'order-7' });
    await world.store.spendAttempt(first.verification.sid, service.sid, 'wrong', world.clock.now());
    world.clock.advance(60_000);
    const replay = await world.send({
      serviceSid: service.sid,
      idempotencyKey: 'order-7',
      to: '+447400999999',
    });
    expect(replay.replayed).toBe(true);
    expect(replay.verification).toEqual({ ...first.verification, attempts_remaining: 4 });
    expect(world.store.charges(service.sid)).toHaveLength(1);
    expect(world.workflow.started).toHaveLength(1);
    // Even a To that is not a number replays: the key decides first.
    expect(
      (await world.send({ serviceSid: service.sid, idempotencyKey: 'order-7', to: 'nope' })).replayed,
    ).toBe(true);
  });

  it('is per service: the same key of another service is a new send', async () => {
    const a = world.addService();
    const b = world.addService();
    const first = await world.send({ serviceSid: a.sid, idempotencyKey: 'k' });
    const second = await world.send({ serviceSid: b.sid, idempotencyKey: 'k' });
    expect(second.replayed).toBe(false);
    expect(second.verification.sid).not.toBe(first.verification.sid);
  });

  it('gives simultaneous sends with one key one verification and one charge', async () => {
    const service = world.addService();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => world.send({ serviceSid: service.sid, idempotencyKey: 'same' })),
    );
    expect(new Set(results.map((r) => r.verification.sid)).size).toBe(1);
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(world.store.charges(service.sid)).toHaveLength(1);
  });
});

describe('the balance', () => {
  it('is spent to exactly zero, then refuses', async () => {
    const service = world.addService({ balance: 1200 });
    await world.send({ serviceSid: service.sid, to: '+447400123456' });
    await world.send({ serviceSid: service.sid, to: '+447400123457' });
    expect(world.store.getService(service.sid)?.balance).toBe(0);
    expect(await refusal(world.send({ serviceSid: service.sid, to: '+447400123458' }))).toBe(
      'insufficient_funds',
    );
  });

  it('refuses, and counts, a send whose balance fell below the price after it was read', async () => {
    const service = world.addService({ balance: 600 });
    const memory = world.store;
    // Another send spends the balance between this send's read and its write.
    const racing = Object.create(memory) as MemoryStore;
    racing.loadSendContext = async (query) => {
      const context = await memory.loadSendContext(query);
      memory.putService({ ...memory.getService(service.sid)!, balance: 0 });
      return context;
    };
    const deps = { ...world.sendDeps, store: racing };
    expect(await refusal(sendVerification(deps, { serviceSid: service.sid, to: UK_MOBILE }))).toBe(
      'insufficient_funds',
    );
    expect(memory.charges(service.sid)).toEqual([]);
    expect(await sendsLogged()).toBe(1);
  });
});

describe('a cold start, whose key secrets are still being read', () => {
  it('reads beside the key read, and writes nothing before the keys are in', async () => {
    let keysIn!: () => void;
    const keyRead = new Promise<KeyRing>((resolve) => (keysIn = () => resolve(masterKeyRing('cold-key'))));
    const vault = new CryptoCodeVault(deferredKeyRing(() => keyRead));
    const steps: string[] = [];
    const { store } = world;
    const load = store.loadSendContext.bind(store);
    const accept = store.acceptSend.bind(store);
    jest.spyOn(store, 'loadSendContext').mockImplementation((query) => (steps.push('read'), load(query)));
    jest.spyOn(store, 'acceptSend').mockImplementation((input) => (steps.push('accept'), accept(input)));
    const service = world.addService();
    world.random.codes.push('270183');

    const sent = sendVerification({ ...world.sendDeps, vault }, { serviceSid: service.sid, to: UK_MOBILE });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The read went out while the keys were being read; the accepting write waits for them.
    expect(steps).toEqual(['read']);
    keysIn();
    const result = await sent;
    expect(steps).toEqual(['read', 'accept']);
    // Sealed and hashed with the keys that came in: a vault over the same key opens the code.
    const stored = await world.store.getVerification(result.verification.sid);
    expect(new CryptoCodeVault('cold-key').open(result.verification.sid, stored!.sealedCode!)).toBe('270183');
  });
});

describe('the first read may be a second behind (eventually consistent), and only a refusal reads again', () => {
  /**
   * A store whose `latest: false` read returns what it held before `lag()` was last called: the writes since
   * then are not in it, as an eventually consistent read can miss the last second's writes.
   */
  const laggingStore = (memory: MemoryStore) => {
    const reads: ('recent' | 'latest')[] = [];
    const snapshots = new Map<string, Awaited<ReturnType<MemoryStore['loadSendContext']>>>();
    const store = Object.create(memory) as MemoryStore;
    store.loadSendContext = async (query) => {
      reads.push(query.latest ? 'latest' : 'recent');
      const current = await memory.loadSendContext(query);
      return (!query.latest && snapshots.get(query.e164)) || current;
    };
    const lag = async (e164: string, serviceSid: string) =>
      snapshots.set(e164, await memory.loadSendContext({ serviceSid, e164, country: 'GB', now: new Date() }));
    return { store, reads, lag };
  };
  /** A send to UK_MOBILE through `store`. */
  const sendThrough = (store: MemoryStore, serviceSid: string, idempotencyKey?: string) =>
    sendVerification(
      { ...world.sendDeps, store },
      { serviceSid, to: UK_MOBILE, ...(idempotencyKey && { idempotencyKey }) },
    );

  it('accepts on the first read alone when it allows the send: one read, not up to date', async () => {
    const service = world.addService();
    const lagging = laggingStore(world.store);
    await sendThrough(lagging.store, service.sid);
    expect(lagging.reads).toEqual(['recent']);
  });

  it('accepts a send the first read would refuse for a top-up it missed, reading again up to date', async () => {
    const service = world.addService({ balance: 0 });
    const lagging = laggingStore(world.store);
    await lagging.lag(UK_MOBILE, service.sid);
    world.store.putService({ ...world.store.getService(service.sid)!, balance: 600 });

    const result = await sendThrough(lagging.store, service.sid);
    expect(result.verification.status).toBe('PENDING');
    expect(lagging.reads).toEqual(['recent', 'latest']);
    expect(world.store.getService(service.sid)?.balance).toBe(0);
    // Counted once, as the accepted send it is: the refusal the stale read suggested was never recorded.
    expect(await sendsLogged()).toBe(1);
  });

  it('refuses, and counts once, only after reading again up to date', async () => {
    const service = world.addService({ balance: 100 });
    const lagging = laggingStore(world.store);
    expect(await refusal(sendThrough(lagging.store, service.sid))).toBe('insufficient_funds');
    expect(lagging.reads).toEqual(['recent', 'latest']);
    expect(await sendsLogged()).toBe(1);
  });

  it('holds the per-number limit exactly when the first read missed the sends before it', async () => {
    const service = world.addService({ balance: 100_000 });
    const lagging = laggingStore(world.store);
    await lagging.lag(UK_MOBILE, service.sid);
    for (let i = 0; i < 3; i++) await world.send({ serviceSid: service.sid, to: UK_MOBILE });

    // The stale read sees no sends; the accepting write finds the log moved on, and the send is decided again
    // on an up-to-date read: the 4th send in the burst window is refused.
    expect(await refusal(sendThrough(lagging.store, service.sid))).toBe('burst');
    expect(lagging.reads).toEqual(['recent', 'latest']);
    expect(world.store.charges(service.sid)).toHaveLength(3);
  });

  it('replays an Idempotency-Key the first read missed, without charging again', async () => {
    const service = world.addService({ balance: 100_000 });
    const lagging = laggingStore(world.store);
    await lagging.lag(UK_MOBILE, service.sid);
    const first = await world.send({ serviceSid: service.sid, to: UK_MOBILE, idempotencyKey: 'retry-1' });

    const again = await sendThrough(lagging.store, service.sid, 'retry-1');
    expect(again.replayed).toBe(true);
    expect(again.verification.sid).toBe(first.verification.sid);
    expect(world.store.charges(service.sid)).toHaveLength(1);
  });
});

describe('the delivery workflow starts beside the accepting transaction', () => {
  /** A store whose accepting write answers only when `commit()` is called; records the order of events. */
  const gatedStore = (memory: MemoryStore, events: string[]) => {
    const store = Object.create(memory) as MemoryStore;
    let commit!: () => void;
    const gate = new Promise<void>((resolve) => (commit = resolve));
    let first = true;
    store.acceptSend = async (input) => {
      events.push('transaction sent');
      // Only the first transaction waits for `commit()`; a later one goes through at once.
      if (first) {
        first = false;
        await gate;
      }
      const result = await memory.acceptSend(input);
      events.push(`transaction ${result.ok ? 'committed' : 'refused'}`);
      return result;
    };
    return { store, commit };
  };

  it('starts it while the transaction is in flight, and answers once both are done', async () => {
    const service = world.addService();
    const events: string[] = [];
    const { store, commit } = gatedStore(world.store, events);
    const workflow = {
      start: async (input: { sid: string }) => {
        events.push('workflow started');
        world.workflow.started.push(input as never);
      },
    };
    const sending = sendVerification(
      { ...world.sendDeps, store, workflow },
      { serviceSid: service.sid, to: UK_MOBILE },
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['transaction sent', 'workflow started']);
    commit();
    const result = await sending;
    expect(events).toEqual(['transaction sent', 'workflow started', 'transaction committed']);
    expect(result.deliveryStarted).toBe(true);
    expect(world.workflow.started.map((input) => input.sid)).toEqual([result.verification.sid]);
  });

  it('after a refused transaction, starts the next decision’s workflow only once its write is in', async () => {
    const service = world.addService({ balance: 100_000 });
    const events: string[] = [];
    const { store, commit } = gatedStore(world.store, events);
    const started: string[] = [];
    const workflow = {
      start: async (input: { sid: string }) =>
        void (events.push('workflow started'), started.push(input.sid)),
    };
    const sending = sendVerification(
      { ...world.sendDeps, store, workflow },
      { serviceSid: service.sid, to: UK_MOBILE },
    );
    await new Promise((resolve) => setImmediate(resolve));
    // Another send to the number commits while this one's transaction is in flight: the number's log moved on,
    // so this transaction is refused and the send decided again under a new SID.
    await world.send({ serviceSid: service.sid, to: UK_MOBILE });
    commit();
    const result = await sending;
    expect(events).toEqual([
      'transaction sent',
      'workflow started',
      'transaction refused',
      'transaction sent',
      'transaction committed',
      'workflow started',
    ]);
    // The first start was for the refused SID (its execution finds nothing); the second for the accepted one.
    expect(started).toHaveLength(2);
    expect(started[1]).toBe(result.verification.sid);
    expect(started[0]).not.toBe(result.verification.sid);
  });

  it('answers 201 when the start fails beside a committed transaction, for the sweeper to start', async () => {
    const service = world.addService();
    world.workflow.failing = true;
    const result = await world.send({ serviceSid: service.sid, to: UK_MOBILE });
    expect(result.deliveryStarted).toBe(false);
    expect(world.store.charges(service.sid)).toHaveLength(1);
  });
});

describe('static controls: the country allow-list and the RiskCheck permission', () => {
  const FR_MOBILE = '+33612345678';
  const DE_MOBILE = '+4915123456789';
  const message = async (promise: Promise<unknown>): Promise<string> =>
    promise.then(
      () => 'sent',
      (error: unknown) => (error instanceof OtpError ? error.message : Promise.reject(error)),
    );

  it('refuses a served country off the allow-list with 403 blocked_by_policy, counted on the number log', async () => {
    const service = world.addService({
      rules: { blockedCountries: [], blockedPrefixes: [], allowedCountries: ['FR'] },
    });
    const refused = world.send({ serviceSid: service.sid, to: UK_MOBILE });
    expect(await message(refused)).toBe('This service does not send to this country.');
    expect(await refusal(world.send({ serviceSid: service.sid, to: UK_MOBILE }))).toBe('blocked_by_policy');
    expect(await sendsLogged(UK_MOBILE)).toBe(2);
    expect(world.store.charges(service.sid)).toEqual([]);
    expect(world.workflow.started).toEqual([]);
    // The listed country is sent to.
    expect((await world.send({ serviceSid: service.sid, to: FR_MOBILE })).verification.to).toBe(FR_MOBILE);
  });

  it('without an allow-list sends to every served country; an empty one to none; unserved stays unroutable', async () => {
    const service = world.addService();
    for (const to of [UK_MOBILE, FR_MOBILE, '+2348031234567'])
      expect((await world.send({ serviceSid: service.sid, to })).verification.status).toBe('PENDING');
    world.store.putService({
      ...service,
      rules: { blockedCountries: [], blockedPrefixes: [], allowedCountries: [] },
    });
    expect(await refusal(world.send({ serviceSid: service.sid, to: DE_MOBILE }))).toBe('blocked_by_policy');
    // A country that is not served is refused by routing, as before, list or not (not counted).
    expect(await refusal(world.send({ serviceSid: service.sid, to: '+81 90 1234 5678' }))).toBe('unroutable');
    expect(await sendsLogged('+819012345678')).toBe(0);
  });

  it('refuses a blocked country that is on the allow-list: a deny entry wins', async () => {
    const service = world.addService({
      rules: { blockedCountries: ['GB'], blockedPrefixes: [], allowedCountries: ['FR', 'GB'] },
    });
    expect(await message(world.send({ serviceSid: service.sid, to: UK_MOBILE }))).toBe(
      'A delivery rule blocks this destination.',
    );
    expect(await message(world.send({ serviceSid: service.sid, to: DE_MOBILE }))).toBe(
      'This service does not send to this country.',
    );
    expect(await message(world.send({ serviceSid: service.sid, to: FR_MOBILE }))).toBe('sent');
    expect(await sendsLogged(UK_MOBILE)).toBe(1);
    expect(await sendsLogged(DE_MOBILE)).toBe(1);
  });

  it('judges a RiskCheck=disable send unless the owner allows it', async () => {
    // +4470 is personal numbering, on the guard's high-risk list: blocked whatever the traffic.
    const personal = '+447011234567';
    const service = world.addService();
    expect(
      await refusal(world.send({ serviceSid: service.sid, to: personal, riskCheckDisabled: true })),
    ).toBe('blocked_by_policy');
    expect(world.store.guardRefusals).toEqual([
      expect.objectContaining({ reason: 'high_risk_range', serviceSid: service.sid, e164: personal }),
    ]);
    world.store.putService({
      ...service,
      guard: { level: 'standard', safeList: [], riskCheckOptOut: true },
    });
    // The guard does not judge it now; the channels cannot reach a personal number.
    expect(
      await refusal(world.send({ serviceSid: service.sid, to: personal, riskCheckDisabled: true })),
    ).toBe('no_eligible_channel');
    // Without RiskCheck=disable the permission changes nothing.
    expect(await refusal(world.send({ serviceSid: service.sid, to: personal }))).toBe('blocked_by_policy');
    expect(world.store.guardRefusals).toHaveLength(2);
  });
});
