/**
 * Webhook decisions over real core writes: each change the memory store makes, with the event marks it
 * advanced, turned into events by `eventsForChange` as the events function does with the change stream.
 */
import { checkVerification } from '../../functions/core/check';
import type { Verification } from '../../functions/core/model';
import { eventsForChange, type WebhookEventType } from '../../functions/core/webhooks';
import { coreWorld, type CoreWorld } from '../support/core-world';

let world: CoreWorld;
let serviceSid: string;
let sid: string;
const CODE = '717171';

beforeEach(async () => {
  world = coreWorld();
  serviceSid = world.addService().sid;
  world.random.codes.push(CODE);
  sid = (await world.send({ serviceSid })).verification.sid;
});

/** Runs a write and returns the event types and sequence of the change it made. */
const eventsOf = async (write: () => Promise<unknown>) => {
  const before = (await world.store.getVerification(sid)) as Verification;
  await write();
  const after = (await world.store.getVerification(sid)) as Verification;
  const marks = world.store.eventMarks(sid);
  const events = eventsForChange({ before, after, sequence: marks.sequence, at: marks.at ?? new Date(0) });
  return { types: events.map((e) => e.type) as WebhookEventType[], sequence: marks.sequence, events };
};

const check = (code: string) => () =>
  checkVerification(world.checkDeps, { serviceSid, verificationSid: sid, code });

it('a wrong check is no event; the right one is verification.verified with the next sequence', async () => {
  expect(await eventsOf(check('000000'))).toMatchObject({ types: [], sequence: 1 });
  world.clock.advance(1000);
  const verified = await eventsOf(check(CODE));
  expect(verified).toMatchObject({ types: ['verification.verified'], sequence: 2 });
  expect(verified.events[0]).toMatchObject({
    created_at: world.clock.now().toISOString(),
    data: { sid, status: 'VERIFIED', attempts_remaining: 3 },
  });
});

it('the fifth wrong check is verification.locked', async () => {
  for (let i = 0; i < 4; i++) expect((await eventsOf(check('000000'))).types).toEqual([]);
  expect(await eventsOf(check('000000'))).toMatchObject({ types: ['verification.locked'], sequence: 5 });
});

it('expiry written back is verification.expired', async () => {
  world.clock.advance(300_000);
  expect(await eventsOf(() => world.store.markExpired(sid, world.clock.now()))).toMatchObject({
    types: ['verification.expired'],
    sequence: 1,
  });
});

it('delivery ends are delivery events: sent, then a late delivered; failed', async () => {
  const at = () => world.clock.now();
  expect((await eventsOf(() => world.store.finishDelivery(sid, 'SENT', at()))).types).toEqual([
    'verification.delivery.sent',
  ]);
  expect(await eventsOf(() => world.store.markDelivered(sid, 'viber', at()))).toMatchObject({
    types: ['verification.delivery.delivered'],
    sequence: 2,
  });
  // A duplicate receipt changes nothing and is no event.
  expect((await eventsOf(() => world.store.markDelivered(sid, 'viber', at()))).types).toEqual([]);

  world.random.codes.push(CODE);
  sid = (await world.send({ serviceSid, to: '+447400123457' })).verification.sid;
  expect((await eventsOf(() => world.store.finishDelivery(sid, 'FAILED', at()))).types).toEqual([
    'verification.delivery.failed',
  ]);
});

describe("a verification's webhooks flag: its service had an endpoint when the code was sent", () => {
  const endpoint = (owner: string, enabled: boolean) => ({
    sid: world.random.sid('WH'),
    serviceSid: owner,
    url: 'https://hooks.example.com/otp',
    enabled,
    createdAt: world.clock.now().toISOString(),
    sealedSecret: 'sealed',
  });
  const sendFor = async (owner: string) => {
    world.random.codes.push(CODE);
    const result = await world.send({ serviceSid: owner, to: '+447400123458' });
    return { result, stored: (await world.store.getVerification(result.verification.sid))! };
  };

  it('is absent without an endpoint; set with one, enabled or not; never in the answer', async () => {
    const none = await sendFor(serviceSid);
    expect(none.stored).not.toHaveProperty('webhooks');

    const enabled = world.addService().sid;
    world.store.putWebhookEndpoint(endpoint(enabled, true));
    const withEndpoint = await sendFor(enabled);
    expect(withEndpoint.stored.webhooks).toBe(true);
    expect(withEndpoint.result.verification).not.toHaveProperty('webhooks');
    expect(Object.keys(withEndpoint.result.verification).sort()).toEqual(
      Object.keys(none.result.verification).sort(),
    );

    const disabled = world.addService().sid;
    world.store.putWebhookEndpoint(endpoint(disabled, false));
    expect((await sendFor(disabled)).stored.webhooks).toBe(true);
  });

  it('an endpoint registered after the send does not flag the verification; the next send is flagged', async () => {
    const before = await sendFor(serviceSid);
    world.store.putWebhookEndpoint(endpoint(serviceSid, true));
    expect((await world.store.getVerification(before.stored.sid))!).not.toHaveProperty('webhooks');
    world.clock.advance(120_000);
    expect((await sendFor(serviceSid)).stored.webhooks).toBe(true);
  });
});
