/**
 * The post-deploy check against the provider simulator with AWS's service models: a request the model refuses
 * is a failed check naming the country and AWS's ValidationException with its field, and nothing is carried.
 * The deliver function's check module runs as the function runs it, with the simulator's settings.
 */
import { runProviderCheckFromEnv } from '../../functions/wiring/provider-check';
import { awsSendersFromEnv } from '../../functions/wiring/provider-senders';
import { inlineVonageCredentials } from '../../functions/wiring/providers';
import { PROVIDER_CHECK_KIND } from '../../functions/core/provider-check';
import { POOL, allow, start, stopAll } from '../support/provider-simulator';

afterEach(stopAll);

const CONFIGURATION_SET = 'arn:aws:sms-voice:us-east-1:000000000000:configuration-set/otp-local-receipts';
const RCS_AGENT =
  'arn:aws:sms-voice:us-east-1:000000000000:rcs-agent/rcs-agent-0123456789abcdef0123456789abcdef';

beforeAll(() => {
  // The simulator does not check SigV4: fake local credentials, never a developer's own.
  process.env.AWS_ACCESS_KEY_ID = 'AKIALOCALSIMULATOR00';
  process.env.AWS_SECRET_ACCESS_KEY = 'local-simulator-secret';
  delete process.env.AWS_SESSION_TOKEN;
});

async function check(settings: Record<string, string>) {
  const running = await start({
    grants: [allow('sms-voice:SendTextMessage', POOL, RCS_AGENT, CONFIGURATION_SET)],
  });
  const env = { ...running.simulator.env(), AWS_REGION: 'us-east-1', ...settings };
  const report = await runProviderCheckFromEnv(
    env,
    { aws: awsSendersFromEnv(env), vonageCredentials: inlineVonageCredentials(env) },
    // Two countries' dry runs only (the event's continuation form): no channel-wide check.
    { kind: PROVIDER_CHECK_KIND, to: { GB: '+447400123456', US: '+12015550123' }, countries: ['GB', 'US'] },
    () => 30_000,
  );
  return { running, report };
}

test('within the model, the dry runs pass', async () => {
  const { report } = await check({});
  expect(report.rows.map((row) => [row.channel, row.country, row.ok])).toEqual([
    ['sms', 'US', true],
    ['sms', 'GB', true],
    ['rcs', 'US', true],
    ['rcs', 'GB', true],
  ]);
});

test('a MaxPrice the model refuses fails each dry run with AWS’s ValidationException and its field', async () => {
  // Synth refuses this value (lib/provider-config.ts); a function whose environment was edited by hand has it.
  const { running, report } = await check({ OTP_AWS_SMS_MAX_PRICE: '1' });
  const sms = report.rows.filter((row) => row.channel === 'sms');
  expect(sms.map((row) => row.country)).toEqual(['US', 'GB']);
  for (const row of sms) {
    expect(row.ok).toBe(false);
    expect(row.detail).toMatch(
      /^to \+\d+: ValidationException: 1 validation error detected: .* \(FIELD_VALIDATION_FAILED\) \[MaxPrice: .*length greater than or equal to 2/,
    );
  }
  expect(running.carrier.messagesTo(undefined)).toEqual([]);
});
