/**
 * The storage ports' contract: every method's success and each reason it refuses, as the core relies on them.
 * `describeStoreContract` defines the suite for one implementation; it runs against `MemoryStore`
 * (test/core/memory-store.test.ts, no Java) and `DynamoStore` on DynamoDB Local
 * (test/contract/dynamo-store.test.ts), so the two cannot drift.
 */
import { cryptoRandom } from '../../functions/adapters/crypto';
import type {
  ApiKeyRecord,
  DeliveryAttempt,
  Service,
  Template,
  Verification,
} from '../../functions/core/model';
import type {
  ApiKeyStore,
  DeliveryStore,
  DeliverySweepStore,
  VerificationStore,
} from '../../functions/core/ports';
import type { WebhookEndpoint, WebhookEndpointStore } from '../../functions/core/webhooks';
import { aVerification } from '../support/fixtures';

type ContractStore = VerificationStore & ApiKeyStore & DeliveryStore & DeliverySweepStore;

/** One implementation under test, with what the admin side does to seed it and what tests read back. */
export interface StoreFixture {
  store: ContractStore;
  endpoints: WebhookEndpointStore;
  putService(service: Service): Promise<void>;
  putTemplate(serviceSid: string, template: Template): Promise<void>;
  putApiKey(record: ApiKeyRecord): Promise<void>;
  putWebhookEndpoint(endpoint: WebhookEndpoint): Promise<void>;
  balance(serviceSid: string): Promise<number | undefined>;
  /** The service's ledger lines, oldest first. */
  charges(serviceSid: string): Promise<{ verificationSid: string; amount: number }[]>;
  /** The webhook event marks of a verification: status-changing writes so far, and the time of the last. */
  eventMarks(sid: string): Promise<{ sequence: number; at: string | undefined }>;
}

export interface StoreFactory {
  /** Once per suite (e.g. create a table). */
  setup?(): Promise<void>;
  /** A fixture for one test; tests use fresh SIDs and numbers, so fixtures may share one backing store. */
  fixture(): Promise<StoreFixture>;
  teardown?(): Promise<void>;
}

/**
 * The hour the run starts in, not a fixed date: items written at T0 carry TTLs a day or more after it, and
 * DynamoDB Local deletes expired items in the background, so a fixed date once more than a day past made the
 * number log vanish under the reads (seen on 2026-11-26 with T0 on 2026-11-21).
 */
const T0 = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
const at = (ms: number): Date => new Date(T0.getTime() + ms);
const PRICE = 600;

let numberCounter = 0;
/** A number no other test of the run uses (the table may be shared). */
const freshNumber = (): string =>
  `+1555${String(Date.now() % 1_000_000).padStart(6, '0')}${String(numberCounter++ % 1000).padStart(3, '0')}${Math.floor(Math.random() * 10)}`;

const aService = (changes: Partial<Service> = {}): Service => ({
  sid: cryptoRandom.sid('VA'),
  name: 'Contract',
  balance: 10_000,
  enabledChannels: ['sms', 'whatsapp'],
  rules: { blockedCountries: [], blockedPrefixes: [] },
  prices: {},
  defaultTemplate: { sid: cryptoRandom.sid('HX'), body: 'Your code is {code}.', locale: 'en' },
  createdAt: T0.toISOString(),
  webhookEndpoints: [],
  ...changes,
});

const claim = (channel: DeliveryAttempt['channel'], ms = 1000): DeliveryAttempt => ({
  channel,
  outcome: 'sending',
  at: at(ms).toISOString(),
});

export function describeStoreContract(name: string, factory: StoreFactory): void {
  describe(`storage ports contract: ${name}`, () => {
    let fx: StoreFixture;
    let store: ContractStore;

    beforeAll(async () => {
      await factory.setup?.();
    });
    afterAll(async () => {
      await factory.teardown?.();
    });
    beforeEach(async () => {
      fx = await factory.fixture();
      store = fx.store;
    });

    const newService = async (changes: Partial<Service> = {}): Promise<Service> => {
      const service = aService(changes);
      await fx.putService(service);
      return service;
    };

    const newVerification = (service: Service, changes: Partial<Verification> = {}): Verification =>
      aVerification({
        sid: cryptoRandom.sid('VE'),
        serviceSid: service.sid,
        to: freshNumber(),
        country: 'US',
        price: PRICE,
        codeHash: 'hash-of-the-code',
        dateCreated: T0.toISOString(),
        expiresAt: at(300_000).toISOString(),
        ...changes,
      });

    /** Accepts a send of a new verification (asserting it was accepted) and returns it. */
    const accepted = async (
      changes: Partial<Verification> = {},
      service?: Service,
      idempotencyKey?: string,
    ): Promise<Verification> => {
      const owner = service ?? (await newService());
      const verification = newVerification(owner, changes);
      const number = await store.getNumber(verification.to);
      const result = await store.acceptSend({
        verification,
        number,
        numberSends: [...number.sends, new Date(verification.dateCreated).getTime()],
        now: new Date(verification.dateCreated),
        ...(idempotencyKey && { idempotencyKey }),
      });
      expect(result).toEqual({ ok: true });
      return verification;
    };

    const read = async (sid: string): Promise<Verification> => {
      const verification = await store.getVerification(sid);
      if (!verification) throw new Error(`${sid} not found`);
      return verification;
    };

    describe('acceptSend and the reads of a send', () => {
      it('writes the verification, the charge, the ledger line, the number log and the idempotency key', async () => {
        const service = await newService({ balance: 1000 });
        const verification = await accepted({}, service, 'key-1');

        expect(await store.getVerification(verification.sid)).toEqual(verification);
        expect(await fx.balance(service.sid)).toBe(1000 - PRICE);
        expect(await fx.charges(service.sid)).toEqual([{ verificationSid: verification.sid, amount: PRICE }]);
        expect(await store.getNumber(verification.to)).toEqual({
          e164: verification.to,
          sends: [T0.getTime()],
          rejectedUntil: {},
          version: 1,
        });
        expect(await store.getIdempotentSid(service.sid, 'key-1', at(1000))).toBe(verification.sid);
        expect(await store.getIdempotentSid(service.sid, 'key-2', at(1000))).toBeUndefined();
        // Remembered per service: another service's same key is free.
        expect(await store.getIdempotentSid(cryptoRandom.sid('VA'), 'key-1', at(1000))).toBeUndefined();
        // Remembered 24 hours from the send, whenever the table's TTL removes the item.
        const sentAt = new Date(verification.dateCreated).getTime();
        expect(await store.getIdempotentSid(service.sid, 'key-1', new Date(sentAt + 86_399_000))).toBe(
          verification.sid,
        );
        expect(
          await store.getIdempotentSid(service.sid, 'key-1', new Date(sentAt + 86_401_000)),
        ).toBeUndefined();
        expect(await fx.eventMarks(verification.sid)).toEqual({ sequence: 0, at: undefined });
      });

      it("keeps a verification's webhooks flag through later writes; a verification without it has none", async () => {
        const flagged = await accepted({ webhooks: true });
        expect((await read(flagged.sid)).webhooks).toBe(true);
        await store.markExpired(flagged.sid, at(301_000));
        expect(await read(flagged.sid)).toMatchObject({ status: 'EXPIRED', webhooks: true });
        const plain = await accepted();
        expect(await read(plain.sid)).not.toHaveProperty('webhooks');
      });

      it('accepts a send whose price is the whole balance', async () => {
        const service = await newService({ balance: PRICE });
        await accepted({}, service);
        expect(await fx.balance(service.sid)).toBe(0);
      });

      it('loads the send context: service, own template, idempotent SID, number', async () => {
        const service = await newService();
        const template: Template = { sid: cryptoRandom.sid('HX'), body: 'Code {code}', locale: 'fr' };
        await fx.putTemplate(service.sid, template);
        const other = await newService();
        const foreign: Template = { sid: cryptoRandom.sid('HX'), body: 'Other {code}', locale: 'en' };
        await fx.putTemplate(other.sid, foreign);
        const verification = await accepted({}, service, 'replayed');

        const context = await store.loadSendContext({
          now: at(1000),
          serviceSid: service.sid,
          templateSid: template.sid,
          idempotencyKey: 'replayed',
          e164: verification.to,
        });
        expect(context).toEqual({
          service: { ...service, balance: service.balance - PRICE },
          template,
          idempotentSid: verification.sid,
          number: { e164: verification.to, sends: [T0.getTime()], rejectedUntil: {}, version: 1 },
        });

        const empty = await store.loadSendContext({
          now: at(1000),
          serviceSid: cryptoRandom.sid('VA'),
          templateSid: foreign.sid,
          idempotencyKey: 'never-used',
          e164: freshNumber(),
        });
        expect(empty.service).toBeUndefined();
        expect(empty.template).toBeUndefined();
        expect(empty.idempotentSid).toBeUndefined();
        expect(empty.number.version).toBe(0);
        // A template of another service is not found.
        const crossed = await store.loadSendContext({
          now: at(1000),
          serviceSid: service.sid,
          templateSid: foreign.sid,
          e164: verification.to,
        });
        expect(crossed.template).toBeUndefined();
      });

      /** Asserts that a refused send wrote nothing: no verification, no charge, number log as it was. */
      const expectNothingWritten = async (service: Service, verification: Verification, balance: number) => {
        expect(await store.getVerification(verification.sid)).toBeUndefined();
        expect(await fx.balance(service.sid)).toBe(balance);
        expect((await fx.charges(service.sid)).map((c) => c.verificationSid)).not.toContain(verification.sid);
      };

      it('refuses insufficient_funds when the balance is below the price, and writes nothing', async () => {
        const service = await newService({ balance: PRICE - 1 });
        const verification = newVerification(service);
        const number = await store.getNumber(verification.to);
        const result = await store.acceptSend({
          verification,
          number,
          numberSends: [T0.getTime()],
          now: T0,
          idempotencyKey: 'poor',
        });
        expect(result).toEqual({ ok: false, reason: 'insufficient_funds' });
        await expectNothingWritten(service, verification, PRICE - 1);
        expect((await store.getNumber(verification.to)).version).toBe(0);
        expect(await store.getIdempotentSid(service.sid, 'poor', at(1000))).toBeUndefined();
      });

      it('refuses no_time when the caller is out of time to settle the charge, and writes nothing', async () => {
        const service = await newService({ balance: 5000 });
        const verification = newVerification(service);
        const number = await store.getNumber(verification.to);
        const result = await store.acceptSend({
          verification,
          number,
          numberSends: [T0.getTime()],
          now: T0,
          idempotencyKey: 'late',
          timeLeftMs: () => 0,
        });
        expect(result).toEqual({ ok: false, reason: 'no_time' });
        await expectNothingWritten(service, verification, 5000);
        expect((await store.getNumber(verification.to)).version).toBe(0);
        expect(await store.getIdempotentSid(service.sid, 'late', at(1000))).toBeUndefined();
      });

      it('refuses insufficient_funds when the service does not exist', async () => {
        const verification = newVerification(aService());
        const result = await store.acceptSend({
          verification,
          number: await store.getNumber(verification.to),
          numberSends: [T0.getTime()],
          now: T0,
        });
        expect(result).toEqual({ ok: false, reason: 'insufficient_funds' });
        expect(await store.getVerification(verification.sid)).toBeUndefined();
      });

      it('refuses idempotency_key_taken when another send took the key, and writes nothing', async () => {
        const service = await newService({ balance: 5000 });
        const first = await accepted({}, service, 'same-key');
        const second = newVerification(service);
        const result = await store.acceptSend({
          verification: second,
          number: await store.getNumber(second.to),
          numberSends: [T0.getTime()],
          now: T0,
          idempotencyKey: 'same-key',
        });
        expect(result).toEqual({ ok: false, reason: 'idempotency_key_taken' });
        await expectNothingWritten(service, second, 5000 - PRICE);
        expect((await store.getNumber(second.to)).version).toBe(0);
        expect(await store.getIdempotentSid(service.sid, 'same-key', at(1000))).toBe(first.sid);
      });

      it('refuses conflict when the number log changed since it was read, and writes nothing', async () => {
        const service = await newService({ balance: 5000 });
        const first = await accepted({}, service);
        const second = newVerification(service, { to: first.to });
        // Read before the first send was written: version 0, but the log is at 1 now.
        const stale = { e164: first.to, sends: [], rejectedUntil: {}, version: 0 };
        const result = await store.acceptSend({
          verification: second,
          number: stale,
          numberSends: [T0.getTime()],
          now: T0,
          idempotencyKey: 'k',
        });
        expect(result).toEqual({ ok: false, reason: 'conflict' });
        await expectNothingWritten(service, second, 5000 - PRICE);
        expect((await store.getNumber(first.to)).version).toBe(1);
        expect(await store.getIdempotentSid(service.sid, 'k', at(1000))).toBeUndefined();

        // Read at version 1 and written meanwhile: still a conflict.
        const current = await store.getNumber(first.to);
        await accepted({ to: first.to }, service);
        const third = newVerification(service, { to: first.to });
        expect(
          await store.acceptSend({ verification: third, number: current, numberSends: [1], now: T0 }),
        ).toEqual({ ok: false, reason: 'conflict' });
        expect(await store.getVerification(third.sid)).toBeUndefined();
      });

      it('records a refused send only at the version read', async () => {
        const e164 = freshNumber();
        const unread = await store.getNumber(e164);
        expect(unread).toEqual({ e164, sends: [], rejectedUntil: {}, version: 0 });
        expect(await store.recordRefusedSend({ number: unread, numberSends: [1, 2], now: T0 })).toBe(true);
        expect(await store.getNumber(e164)).toEqual({ e164, sends: [1, 2], rejectedUntil: {}, version: 1 });
        // The same stale read again: refused, the log unchanged.
        expect(await store.recordRefusedSend({ number: unread, numberSends: [9], now: T0 })).toBe(false);
        const current = await store.getNumber(e164);
        expect(current.sends).toEqual([1, 2]);
        expect(await store.recordRefusedSend({ number: current, numberSends: [2, 3], now: T0 })).toBe(true);
        expect(await store.getNumber(e164)).toEqual({ e164, sends: [2, 3], rejectedUntil: {}, version: 2 });
      });
    });

    describe('spendAttempt', () => {
      const now = at(1000);

      it('spends one attempt, records the guess and marks a possible event', async () => {
        const v = await accepted();
        const result = await store.spendAttempt(v.sid, v.serviceSid, 'wrong-guess', now);
        expect(result).toEqual({
          ok: true,
          verification: { ...v, attemptsRemaining: 4, lastGuessHash: 'wrong-guess' },
        });
        expect(await fx.eventMarks(v.sid)).toEqual({ sequence: 1, at: now.toISOString() });
        expect(await store.spendAttempt(v.sid, v.serviceSid, 'hash-of-the-code', at(2000))).toEqual({
          ok: true,
          verification: { ...v, attemptsRemaining: 3, lastGuessHash: 'hash-of-the-code' },
        });
        expect(await fx.eventMarks(v.sid)).toEqual({ sequence: 2, at: at(2000).toISOString() });
      });

      it('refuses an unknown verification without a current item', async () => {
        expect(await store.spendAttempt(cryptoRandom.sid('VE'), cryptoRandom.sid('VA'), 'g', now)).toEqual({
          ok: false,
        });
      });

      /** Asserts a refusal that returns the item as it was and spent nothing. */
      const expectRefused = async (v: Verification, serviceSid = v.serviceSid, when = now) => {
        const before = await read(v.sid);
        const marks = await fx.eventMarks(v.sid);
        expect(await store.spendAttempt(v.sid, serviceSid, 'another-guess', when)).toEqual({
          ok: false,
          current: before,
        });
        expect(await read(v.sid)).toEqual(before);
        expect(await fx.eventMarks(v.sid)).toEqual(marks);
      };

      it('refuses a verification of another service', async () => {
        const v = await accepted();
        await expectRefused(v, cryptoRandom.sid('VA'));
      });

      it('refuses at and after expiry', async () => {
        const v = await accepted();
        await expectRefused(v, v.serviceSid, new Date(v.expiresAt));
        await expectRefused(v, v.serviceSid, at(400_000));
      });

      it('refuses once no attempt is left', async () => {
        const v = await accepted({ attemptsRemaining: 2 });
        for (const guess of ['a', 'b']) {
          expect((await store.spendAttempt(v.sid, v.serviceSid, guess, now)).ok).toBe(true);
        }
        expect((await read(v.sid)).attemptsRemaining).toBe(0);
        await expectRefused(v);
      });

      it('refuses once the code was guessed right, with attempts left', async () => {
        const v = await accepted();
        expect((await store.spendAttempt(v.sid, v.serviceSid, 'hash-of-the-code', now)).ok).toBe(true);
        await expectRefused(v);
      });

      it('refuses a code written back EXPIRED, even before its expiry time', async () => {
        const v = await accepted({ expiresAt: at(500).toISOString() });
        await store.markExpired(v.sid, at(600));
        expect((await read(v.sid)).status).toBe('EXPIRED');
        await expectRefused(v, v.serviceSid, at(100));
      });

      it('refuses a caller-supplied code (no code hash)', async () => {
        const v = await accepted({ clientCode: true, codeHash: undefined });
        await expectRefused(v);
      });
    });

    describe('markExpired', () => {
      it('writes EXPIRED back for a PENDING code at or past its expiry, once', async () => {
        const v = await accepted();
        await store.markExpired(v.sid, new Date(v.expiresAt));
        expect((await read(v.sid)).status).toBe('EXPIRED');
        expect(await fx.eventMarks(v.sid)).toEqual({ sequence: 1, at: v.expiresAt });
        await store.markExpired(v.sid, at(900_000));
        expect(await fx.eventMarks(v.sid)).toEqual({ sequence: 1, at: v.expiresAt });
      });

      const expectUnchanged = async (v: Verification, now: Date) => {
        const before = await read(v.sid);
        const marks = await fx.eventMarks(v.sid);
        await store.markExpired(v.sid, now);
        expect(await read(v.sid)).toEqual(before);
        expect(await fx.eventMarks(v.sid)).toEqual(marks);
      };

      it('leaves a code before its expiry', async () => {
        const v = await accepted();
        await expectUnchanged(v, at(299_999));
      });

      it('leaves a code guessed right (VERIFIED)', async () => {
        const v = await accepted();
        await store.spendAttempt(v.sid, v.serviceSid, 'hash-of-the-code', at(1000));
        await expectUnchanged(v, at(400_000));
      });

      it('leaves a code with no attempt left (LOCKED)', async () => {
        const v = await accepted({ attemptsRemaining: 1 });
        await store.spendAttempt(v.sid, v.serviceSid, 'wrong', at(1000));
        await expectUnchanged(v, at(400_000));
      });

      it('does nothing for an unknown verification', async () => {
        await expect(store.markExpired(cryptoRandom.sid('VE'), at(400_000))).resolves.toBeUndefined();
        expect(await store.getVerification(cryptoRandom.sid('VE'))).toBeUndefined();
      });
    });

    describe('countKeyRequest', () => {
      const minute = (n: number) => new Date(T0.getTime() + n * 60_000);
      const newKey = async (changes: Partial<ApiKeyRecord> = {}) => {
        const record: ApiKeyRecord = {
          keyHash: cryptoRandom.sid('VE').slice(2) + cryptoRandom.sid('VE').slice(2),
          serviceSid: cryptoRandom.sid('VA'),
          createdAt: T0.toISOString(),
          ...changes,
        };
        await fx.putApiKey(record);
        return record;
      };
      const count = (key: ApiKeyRecord, windowStart: Date, limit = 2, serviceSid = key.serviceSid) =>
        store.countKeyRequest({ keyHash: key.keyHash, serviceSid, windowStart, limit });

      it('counts up to the limit in a fixed window, then refuses until the next window', async () => {
        const key = await newKey();
        const w0 = minute(0).getTime();
        expect(await count(key, minute(0))).toEqual({ outcome: 'allowed', window: w0 });
        expect(await count(key, minute(0))).toEqual({ outcome: 'allowed', window: w0 });
        expect(await count(key, minute(0))).toEqual({ outcome: 'limited', window: w0 });
        // A refused request counts nothing.
        expect(await count(key, minute(0))).toEqual({ outcome: 'limited', window: w0 });
        const w1 = minute(1).getTime();
        expect(await count(key, minute(1))).toEqual({ outcome: 'allowed', window: w1 });
        expect(await count(key, minute(1))).toEqual({ outcome: 'allowed', window: w1 });
        expect(await count(key, minute(1))).toEqual({ outcome: 'limited', window: w1 });
      });

      it('counts each window apart: a caller whose clock is behind at the edge counts in its own window', async () => {
        const key = await newKey();
        const [w0, w1] = [minute(0).getTime(), minute(1).getTime()];
        expect(await count(key, minute(1))).toEqual({ outcome: 'allowed', window: w1 });
        expect(await count(key, minute(0))).toEqual({ outcome: 'allowed', window: w0 });
        expect(await count(key, minute(0))).toEqual({ outcome: 'allowed', window: w0 });
        expect(await count(key, minute(0))).toEqual({ outcome: 'limited', window: w0 });
        // The later window kept its own count.
        expect(await count(key, minute(1))).toEqual({ outcome: 'allowed', window: w1 });
        expect(await count(key, minute(1))).toEqual({ outcome: 'limited', window: w1 });
        // A window long past starts again from nothing, and so does a later one.
        expect(await count(key, minute(5))).toEqual({ outcome: 'allowed', window: minute(5).getTime() });
      });

      it('refuses an unknown key, a revoked key and a key of another service, counting nothing', async () => {
        const key = await newKey();
        const revoked = await newKey({ revokedAt: T0.toISOString() });
        expect(
          await store.countKeyRequest({
            keyHash: 'f'.repeat(64),
            serviceSid: key.serviceSid,
            windowStart: minute(0),
            limit: 1,
          }),
        ).toEqual({ outcome: 'unknown' });
        expect(await count(revoked, minute(0))).toEqual({ outcome: 'revoked' });
        expect(await count(revoked, minute(0))).toEqual({ outcome: 'revoked' });
        const otherService = cryptoRandom.sid('VA');
        expect(await count(key, minute(0), 1, otherService)).toEqual({ outcome: 'forbidden' });
        expect(await count(key, minute(0), 1, otherService)).toEqual({ outcome: 'forbidden' });
        // Nothing was counted: the key's one request of this minute is still free.
        expect(await count(key, minute(0), 1)).toEqual({ outcome: 'allowed', window: minute(0).getTime() });
        expect(await count(key, minute(0), 1)).toEqual({ outcome: 'limited', window: minute(0).getTime() });
      });
    });

    describe('delivery', () => {
      it('claims each channel once, only while delivery runs', async () => {
        const v = await accepted();
        expect(await store.claimChannel(v.sid, 0, claim('sna'))).toBe(true);
        expect(await store.claimChannel(v.sid, 0, claim('sna', 2000))).toBe(false);
        expect((await read(v.sid)).deliveries).toEqual({ '0': claim('sna') });
        expect(await store.claimChannel(v.sid, 1, claim('viber'))).toBe(true);
        await store.finishDelivery(v.sid, 'SENT', at(3000));
        expect(await store.claimChannel(v.sid, 2, claim('sms'))).toBe(false);
        expect(Object.keys((await read(v.sid)).deliveries)).toEqual(['0', '1']);
        expect(await store.claimChannel(cryptoRandom.sid('VE'), 0, claim('sna'))).toBe(false);
      });

      it("writes the verification's channel with a claim when told, null included", async () => {
        const v = await accepted();
        expect((await read(v.sid)).channel).not.toBeNull();
        expect(await store.claimChannel(v.sid, 0, claim('sna'), {}, null)).toBe(true);
        expect((await read(v.sid)).channel).toBeNull();
        expect(await store.claimChannel(v.sid, 1, claim('viber'), {}, 'viber')).toBe(true);
        expect((await read(v.sid)).channel).toBe('viber');
        // Without it, the channel is left as it is.
        expect(await store.claimChannel(v.sid, 2, claim('sms'))).toBe(true);
        expect((await read(v.sid)).channel).toBe('viber');
      });

      it('records the provider answer on a claimed channel', async () => {
        const v = await accepted();
        await store.claimChannel(v.sid, 0, claim('sna'));
        const answer: DeliveryAttempt = {
          channel: 'sna',
          outcome: 'accepted',
          messageId: 'm-1',
          at: at(1500).toISOString(),
        };
        await store.recordChannelOutcome(v.sid, 0, answer);
        expect((await read(v.sid)).deliveries).toEqual({ '0': answer });
      });

      it('records the answers the workflow carried with the next claim, the end or the receipt, in that write', async () => {
        const accept = (channel: 'sna' | 'viber', ms: number, messageId: string): DeliveryAttempt => ({
          ...claim(channel, ms),
          outcome: 'accepted',
          messageId,
        });
        const v = await accepted();
        await store.claimChannel(v.sid, 0, claim('sna'));
        expect(
          await store.claimChannel(v.sid, 1, claim('viber', 2000), { 0: accept('sna', 1000, 'm-0') }),
        ).toBe(true);
        expect((await read(v.sid)).deliveries).toEqual({
          0: accept('sna', 1000, 'm-0'),
          1: claim('viber', 2000),
        });
        // A claim refused records nothing it carried.
        expect(
          await store.claimChannel(v.sid, 1, claim('viber', 3000), { 0: accept('sna', 1000, 'x') }),
        ).toBe(false);
        await store.finishDelivery(v.sid, 'SENT', at(4000), { 1: accept('viber', 2000, 'm-1') });
        expect(await read(v.sid)).toMatchObject({
          deliveryStatus: 'SENT',
          deliveries: { 0: accept('sna', 1000, 'm-0'), 1: accept('viber', 2000, 'm-1') },
        });

        const receipted = await accepted();
        await store.claimChannel(receipted.sid, 0, claim('sna'));
        expect(
          await store.markDelivered(receipted.sid, 'sna', at(5000), { 0: accept('sna', 1000, 'r-0') }),
        ).toBe(true);
        expect(await read(receipted.sid)).toMatchObject({
          deliveryStatus: 'DELIVERED',
          deliveries: { 0: accept('sna', 1000, 'r-0') },
        });
      });

      it('finishes a PENDING delivery once: drops the sealed code and marks the event', async () => {
        const v = await accepted();
        await store.finishDelivery(v.sid, 'FAILED', at(5000));
        const finished = await read(v.sid);
        expect(finished).toEqual({ ...v, deliveryStatus: 'FAILED', sealedCode: undefined });
        expect(await fx.eventMarks(v.sid)).toEqual({ sequence: 1, at: at(5000).toISOString() });
        await store.finishDelivery(v.sid, 'SENT', at(6000));
        expect(await read(v.sid)).toEqual(finished);
        expect(await fx.eventMarks(v.sid)).toEqual({ sequence: 1, at: at(5000).toISOString() });
      });

      it('marks DELIVERED from PENDING or SENT only, forward only', async () => {
        const pending = await accepted();
        expect(await store.markDelivered(pending.sid, 'viber', at(2000))).toBe(true);
        expect(await read(pending.sid)).toEqual({
          ...pending,
          deliveryStatus: 'DELIVERED',
          channel: 'viber',
          sealedCode: undefined,
        });
        expect(await fx.eventMarks(pending.sid)).toEqual({ sequence: 1, at: at(2000).toISOString() });
        // A duplicate receipt changes nothing, and a finish after it neither.
        expect(await store.markDelivered(pending.sid, 'sna', at(3000))).toBe(false);
        await store.finishDelivery(pending.sid, 'SENT', at(3000));
        expect((await read(pending.sid)).deliveryStatus).toBe('DELIVERED');
        expect((await read(pending.sid)).channel).toBe('viber');
        expect((await fx.eventMarks(pending.sid)).sequence).toBe(1);

        const sent = await accepted();
        await store.finishDelivery(sent.sid, 'SENT', at(2000));
        expect(await store.markDelivered(sent.sid, 'sna', at(9000))).toBe(true);
        expect(await read(sent.sid)).toMatchObject({ deliveryStatus: 'DELIVERED', channel: 'sna' });
        expect(await fx.eventMarks(sent.sid)).toEqual({ sequence: 2, at: at(9000).toISOString() });

        const failed = await accepted();
        await store.finishDelivery(failed.sid, 'FAILED', at(2000));
        expect(await store.markDelivered(failed.sid, 'sna', at(9000))).toBe(false);
        expect((await read(failed.sid)).deliveryStatus).toBe('FAILED');

        expect(await store.markDelivered(cryptoRandom.sid('VE'), 'sna', at(9000))).toBe(false);
      });

      it('records rejections per channel on the number, kept by later sends', async () => {
        const e164 = freshNumber();
        const until = at(30 * 86_400_000);
        await store.recordRejections(e164, ['sna', 'viber'], until);
        expect(await store.getNumber(e164)).toEqual({
          e164,
          sends: [],
          rejectedUntil: { sna: until.getTime(), viber: until.getTime() },
          version: 0,
        });
        const later = at(31 * 86_400_000);
        await store.recordRejections(e164, ['viber'], later);
        // A send after the rejections keeps them (the number log is written at version 0).
        const v = await accepted({ to: e164 });
        expect(await store.getNumber(v.to)).toEqual({
          e164,
          sends: [T0.getTime()],
          rejectedUntil: { sna: until.getTime(), viber: later.getTime() },
          version: 1,
        });
      });
    });

    describe("the sweeper's reads: the ledger, the verifications, its cursor", () => {
      it('lists accepted sends by their charge time, from and to included, oldest first, across services', async () => {
        const [one, two] = [await newService({ balance: 100_000 }), await newService({ balance: 100_000 })];
        const created = [at(0), at(59_999), at(60_000), at(125_000)];
        const sids: string[] = [];
        for (const [i, time] of created.entries())
          sids.push((await accepted({ dateCreated: time.toISOString() }, i % 2 ? two : one)).sid);
        const listing = async (from: Date, to: Date) =>
          (await store.listAcceptedSends([{ from, to }]))[0]!.filter((send) => sids.includes(send.sid));
        const mine = async (from: Date, to: Date) => (await listing(from, to)).map((send) => send.sid);
        expect(await mine(at(0), at(125_000))).toEqual(sids);
        expect(await mine(at(59_999), at(60_000))).toEqual([sids[1], sids[2]]);
        expect(await mine(at(1), at(59_998))).toEqual([]);
        // Several spans in one call (the sweeper's two halves), each listed apart.
        const [early, late] = await store.listAcceptedSends([
          { from: at(0), to: at(59_999) },
          { from: at(60_000), to: at(125_000) },
        ]);
        expect(early!.map((send) => send.sid).filter((sid) => sids.includes(sid))).toEqual(sids.slice(0, 2));
        expect(late!.map((send) => send.sid).filter((sid) => sids.includes(sid))).toEqual(sids.slice(2));
        // Each with its acceptance time, which the sweeper's cursor moves to.
        expect(await listing(at(59_999), at(59_999))).toEqual([
          { sid: sids[1], at: at(59_999).toISOString() },
        ]);
        // The ledger says nothing of delivery: an ended one is listed as before (the sweeper reads the record).
        await store.markDelivered(sids[0]!, 'sna', at(1000));
        expect(await mine(at(0), at(0))).toEqual([sids[0]]);
      });

      it('does not list a send that was refused (no charge line)', async () => {
        const service = await newService({ balance: 0 });
        const verification = newVerification(service, { dateCreated: at(7).toISOString() });
        const number = await store.getNumber(verification.to);
        expect(
          await store.acceptSend({ verification, number, numberSends: [at(7).getTime()], now: at(7) }),
        ).toEqual({ ok: false, reason: 'insufficient_funds' });
        expect(
          (await store.listAcceptedSends([{ from: at(7), to: at(7) }]))[0]!.map((send) => send.sid),
        ).not.toContain(verification.sid);
      });

      it('reads many verifications at once, more than one batch, leaving out the ones that do not exist', async () => {
        const service = await newService({ balance: 1_000_000 });
        const sids: string[] = [];
        for (let i = 0; i < 105; i++) sids.push((await accepted({}, service)).sid);
        const missing = cryptoRandom.sid('VE');
        const found = await store.readVerifications([...sids, missing]);
        expect(found.map((v) => v.sid).sort()).toEqual([...sids].sort());
        expect(found.find((v) => v.sid === sids[0])).toEqual(await read(sids[0]!));
        expect(await store.readVerifications([])).toEqual([]);
      });

      it('saves the cursor only over the one it read (two runs cannot both advance it)', async () => {
        const before = await store.getSweepCursor();
        const next = {
          restartedThrough: at(1000).toISOString(),
          settledThrough: at(500).toISOString(),
          deferred: { VE1: at(2000).toISOString() },
          version: (before?.version ?? 0) + 1,
        };
        expect(await store.saveSweepCursor(next, before)).toBe(true);
        expect(await store.getSweepCursor()).toEqual(next);
        // A run that read the cursor before `next` was saved loses, and writes nothing.
        const late = { ...next, restartedThrough: at(9000).toISOString(), version: next.version };
        expect(await store.saveSweepCursor(late, before)).toBe(false);
        expect(await store.getSweepCursor()).toEqual(next);
        const after = { ...next, deferred: {}, version: next.version + 1 };
        expect(await store.saveSweepCursor(after, next)).toBe(true);
        expect(await store.getSweepCursor()).toEqual(after);
      });
    });

    describe('webhook endpoints', () => {
      it("lists a service's endpoints by SID and reads one", async () => {
        const serviceSid = cryptoRandom.sid('VA');
        const endpoint = (changes: Partial<WebhookEndpoint> = {}): WebhookEndpoint => ({
          sid: cryptoRandom.sid('WH'),
          serviceSid,
          url: 'https://hooks.example.com/otp',
          enabled: true,
          createdAt: T0.toISOString(),
          sealedSecret: 'sealed',
          ...changes,
        });
        const first = endpoint();
        const second = endpoint({
          enabled: false,
          previousSealedSecret: 'old',
          previousSecretUntil: T0.toISOString(),
        });
        const foreign = endpoint({ serviceSid: cryptoRandom.sid('VA') });
        for (const e of [first, second, foreign]) await fx.putWebhookEndpoint(e);
        expect(await fx.endpoints.listEndpoints(serviceSid)).toEqual(
          [first, second].sort((x, y) => (x.sid < y.sid ? -1 : 1)),
        );
        expect(await fx.endpoints.getEndpoint(serviceSid, second.sid)).toEqual(second);
        expect(await fx.endpoints.getEndpoint(serviceSid, foreign.sid)).toBeUndefined();
        expect(await fx.endpoints.listEndpoints(cryptoRandom.sid('VA'))).toEqual([]);
      });
    });
  });
}
