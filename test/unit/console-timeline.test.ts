/** The console's timeline of a verification: how each delivery attempt reads. */
import { timeline, type TimelineRecord } from '../../functions/console/views';

const record = (deliveries: TimelineRecord['deliveries']): TimelineRecord =>
  ({
    sid: 'VE0123456789abcdef0123456789abcdef',
    accountSid: 'AC0123456789abcdef0123456789abcdef',
    serviceSid: 'VA0123456789abcdef0123456789abcdef',
    to: '+447400123456',
    country: 'GB',
    status: 'PENDING',
    deliveryStatus: 'PENDING',
    channel: 'sms',
    price: 500,
    attemptsRemaining: 5,
    expiresAt: '2026-11-26T12:05:00.000Z',
    dateCreated: '2026-11-26T12:00:00.000Z',
    clientCode: false,
    channels: ['whatsapp', 'sms'],
    message: 'Your code is {code}.',
    deliveries,
    eventCount: 1,
  }) as unknown as TimelineRecord;

test('a skipped channel reads as not sent, not as a provider error; a provider error keeps its code and reason', () => {
  const { entries } = timeline(
    record({
      0: {
        channel: 'whatsapp',
        outcome: 'failed',
        reason: "skipped: the code expires in 20 s, below the channel's 30 s minimum",
        skipped: true,
        at: '2026-11-26T12:04:40.000Z',
      },
      1: {
        channel: 'sms',
        outcome: 'failed',
        reason: 'User is not authorized to perform: sms-voice:SendTextMessage',
        errorCode: 'access_denied',
        at: '2026-11-26T12:04:41.000Z',
      },
    }),
    { maxCheckAttempts: 5, channelWaitSeconds: 8 },
    new Date('2026-11-26T12:04:42.000Z'),
  );
  const attempts = entries.filter((entry) => entry.kind === 'attempt').map((entry) => entry.text);
  expect(attempts).toEqual([
    "whatsapp: not sent (skipped: the code expires in 20 s, below the channel's 30 s minimum)",
    'sms: provider error (access_denied): User is not authorized to perform: sms-voice:SendTextMessage',
  ]);
});

test('the code line gives its time as the console shows every time: UTC to the second, not raw ISO', () => {
  const settings = { maxCheckAttempts: 5, channelWaitSeconds: 8 };
  const text = (now: string) =>
    timeline(record({}), settings, new Date(now)).entries.filter((entry) => entry.text.startsWith('Code '))[0]
      ?.text;
  expect(text('2026-11-26T12:01:00.000Z')).toBe('Code PENDING until 2026-11-26 12:05:00Z');
  expect(text('2026-11-26T12:06:00.000Z')).toBe('Code EXPIRED at 2026-11-26 12:05:00Z');
});
