/** Check and fetch through the core with the memory store and a fake clock. */
import { CryptoCodeVault } from '../../functions/adapters/crypto';
import { deferredKeyRing, masterKeyRing, type KeyRing } from '../../functions/adapters/keyring';
import { checkVerification, fetchVerification } from '../../functions/core/check';
import { OtpError } from '../../functions/core/errors';
import { CORE_MASTER_KEY, coreWorld, type CoreWorld } from '../support/core-world';

let world: CoreWorld;
let serviceSid: string;
let sid: string;
const CODE = '381604';

beforeEach(async () => {
  world = coreWorld();
  serviceSid = world.addService().sid;
  world.random.codes.push(CODE);
  sid = (await world.send({ serviceSid })).verification.sid;
});

const check = (code: string, options: { sid?: string; service?: string } = {}) =>
  checkVerification(world.checkDeps, {
    serviceSid: options.service ?? serviceSid,
    verificationSid: options.sid ?? sid,
    code,
  });

const errorCode = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (error) {
    if (error instanceof OtpError) return error.code;
    throw error;
  }
  throw new Error('no error');
};

describe('check', () => {
  it('verifies the right code, once', async () => {
    const result = await check(CODE);
    expect(result.outcome).toBe('verified');
    expect(result.verification).toMatchObject({ status: 'VERIFIED', attempts_remaining: 4 });
    const again = await check(CODE);
    expect(again.outcome).toBe('already_verified');
    expect(again.verification).toMatchObject({ status: 'VERIFIED', attempts_remaining: 4 });
    expect((await world.store.getVerification(sid))?.attemptsRemaining).toBe(4);
  });

  it('compares exactly: a near miss is wrong and spends an attempt', async () => {
    for (const [guess, left] of [
      [`${CODE} `, 4],
      [`0${CODE}`, 3],
      [CODE.slice(0, 5), 2],
    ] as const) {
      const result = await check(guess);
      expect(result.outcome).toBe('wrong_code');
      expect(result.verification).toMatchObject({ status: 'PENDING', attempts_remaining: left });
    }
  });

  it('locks on the fifth wrong code; the right code after that is refused', async () => {
    for (let i = 1; i <= 4; i++) expect((await check('000000')).outcome).toBe('wrong_code');
    const fifth = await check('000000');
    expect(fifth.outcome).toBe('locked');
    expect(fifth.verification).toMatchObject({ status: 'LOCKED', attempts_remaining: 0 });
    const after = await check(CODE);
    expect(after.outcome).toBe('locked');
    expect(after.verification.status).toBe('LOCKED');
  });

  it('verifies the right code on the fifth attempt', async () => {
    for (let i = 1; i <= 4; i++) await check('000000');
    const fifth = await check(CODE);
    expect(fifth.outcome).toBe('verified');
    expect(fifth.verification).toMatchObject({ status: 'VERIFIED', attempts_remaining: 0 });
  });

  it('refuses an expired code, writes EXPIRED back and spends nothing', async () => {
    world.clock.advance(300_000);
    const result = await check(CODE);
    expect(result.outcome).toBe('expired');
    expect(result.verification).toMatchObject({ status: 'EXPIRED', attempts_remaining: 5 });
    expect((await world.store.getVerification(sid))?.status).toBe('EXPIRED');
    expect(world.store.eventMarks(sid).sequence).toBe(1);
    // Still expired, and written back only once.
    expect((await check(CODE)).outcome).toBe('expired');
    expect(world.store.eventMarks(sid).sequence).toBe(1);
  });

  it('accepts the code a millisecond before expiry', async () => {
    world.clock.advance(299_999);
    expect((await check(CODE)).outcome).toBe('verified');
  });

  it('refuses a caller-supplied code with client_code', async () => {
    const own = (await world.send({ serviceSid, code: 'ABC123', to: '+447400123457' })).verification.sid;
    expect(await errorCode(check('ABC123', { sid: own }))).toBe('client_code');
  });

  it('answers not_found for a malformed SID, an unknown one, and one of another service (spending nothing)', async () => {
    expect(await errorCode(check(CODE, { sid: 'VE123' }))).toBe('not_found');
    expect(await errorCode(check(CODE, { sid: `VE${'a'.repeat(32)}` }))).toBe('not_found');
    const other = world.addService().sid;
    expect(await errorCode(check(CODE, { service: other }))).toBe('not_found');
    expect((await world.store.getVerification(sid))?.attemptsRemaining).toBe(5);
    expect((await check(CODE)).outcome).toBe('verified');
  });

  it('gives exactly one verified among 20 simultaneous right checks', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => check(CODE)));
    expect(results.filter((r) => r.outcome === 'verified')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'already_verified')).toHaveLength(19);
    expect((await world.store.getVerification(sid))?.attemptsRemaining).toBe(4);
  });

  it('never spends more than five attempts under 20 simultaneous wrong checks', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => check('999999')));
    expect(results.filter((r) => r.outcome === 'wrong_code')).toHaveLength(4);
    expect(results.filter((r) => r.outcome === 'locked')).toHaveLength(16);
  });
});

describe('fetch', () => {
  it('derives EXPIRED at read time without a write, and hides other services', async () => {
    expect((await fetchVerification(world.checkDeps, { serviceSid, verificationSid: sid })).status).toBe(
      'PENDING',
    );
    world.clock.advance(300_000);
    expect((await fetchVerification(world.checkDeps, { serviceSid, verificationSid: sid })).status).toBe(
      'EXPIRED',
    );
    expect((await world.store.getVerification(sid))?.status).toBe('PENDING');
    const other = world.addService().sid;
    expect(
      await errorCode(fetchVerification(world.checkDeps, { serviceSid: other, verificationSid: sid })),
    ).toBe('not_found');
  });
});

describe('a cold start, whose key secrets are still being read', () => {
  it('spends no attempt before the hash key is in, then checks as usual', async () => {
    let keysIn!: () => void;
    const keyRead = new Promise<KeyRing>(
      (resolve) => (keysIn = () => resolve(masterKeyRing(CORE_MASTER_KEY))),
    );
    const vault = new CryptoCodeVault(deferredKeyRing(() => keyRead));
    const spend = jest.spyOn(world.store, 'spendAttempt');

    const checked = checkVerification(
      { ...world.checkDeps, vault },
      { serviceSid, verificationSid: sid, code: CODE },
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(spend).not.toHaveBeenCalled();
    keysIn();
    expect((await checked).verification.status).toBe('VERIFIED');
    expect(spend).toHaveBeenCalledTimes(1);
  });
});
