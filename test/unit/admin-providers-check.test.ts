/**
 * `providers check --stack`: the command invokes the deployed deliver function (a fake invoker here: the
 * Lambda lookup and Invoke are the SDK's), continues while the function hands back countries, prints pass or
 * fail per channel and country, and exits 1 when a check failed or the function itself failed.
 */
import { runAdmin } from '../../scripts/admin/cli';
import { PROVIDER_CHECK_KIND, type ProviderCheckReport } from '../../functions/core/provider-check';
import { AdminError } from '../../scripts/admin/framework';
import { ROUTES } from '../../functions/core/routing';

const report = (over: Partial<ProviderCheckReport>): ProviderCheckReport => ({
  kind: PROVIDER_CHECK_KIND,
  rows: [],
  cannotCheck: {},
  notChecked: [],
  remaining: [],
  ...over,
});
const row = (country: string, ok: boolean, detail = 'to +1: accepted, not sent') => ({
  channel: 'sms' as const,
  provider: 'aws-sms',
  country,
  countries: [country],
  check: 'DryRun SendTextMessage',
  ok,
  detail,
});

async function admin(argv: string[], answers: unknown[]) {
  const events: unknown[] = [];
  const out: string[] = [];
  const err: string[] = [];
  let destroyed = 0;
  const code = await runAdmin(
    argv,
    { out: (text) => out.push(text), err: (text) => err.push(text) },
    {
      readLocalStack: () => undefined,
      deployedDeliverInvoker: (stack, region) => {
        events.push({ stack, region });
        return {
          destroy: () => destroyed++,
          invoke: (event) => {
            events.push(event);
            const answer = answers.shift();
            return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
          },
        };
      },
    },
  );
  return { code, events, out: out.join('\n'), err: err.join('\n'), destroyed };
}

test('invokes the stack’s deliver function with the check event, again for the countries left', async () => {
  const { code, events, out, destroyed } = await admin(
    ['providers', 'check', '--stack', 'OtpStack', '--region', 'eu-west-1', '--to', '+918123456789'],
    [report({ rows: [row('US', true)], remaining: ['IN'] }), report({ rows: [row('IN', true)] })],
  );
  const numbers = (events[1] as { to: Record<string, string> }).to;
  expect(numbers).toMatchObject({ IN: '+918123456789', US: '+12015550123', GB: '+447400123456' });
  expect(events).toEqual([
    { stack: 'OtpStack', region: 'eu-west-1' },
    { kind: PROVIDER_CHECK_KIND, to: numbers },
    { kind: PROVIDER_CHECK_KIND, to: numbers, countries: ['IN'] },
  ]);
  // Every served country has a number: the one given, else its example mobile number.
  expect(Object.keys(numbers).sort()).toEqual(Object.keys(ROUTES).sort());
  expect(code).toBe(0);
  expect(out).toMatch(/^Providers check of stack OtpStack in eu-west-1, .* Nothing was sent\./);
  expect(out).toMatch(/^sms +IN +aws-sms +DryRun SendTextMessage +pass/m);
  expect(out).toMatch(/2 checks passed\.$/);
  expect(destroyed).toBe(1);
});

test('a failed check: FAIL with AWS’s error, exit code 1, and --json prints the report', async () => {
  const denied = 'to +12015550123: AccessDeniedException: User: … is not authorized';
  const { code, out } = await admin(
    ['providers', 'check', '--stack', 'OtpStack', '--json'],
    [report({ rows: [row('US', false, denied)] })],
  );
  expect(code).toBe(1);
  expect((JSON.parse(out) as ProviderCheckReport).rows[0]).toMatchObject({ ok: false, detail: denied });
});

test('the function’s own failure is the command’s, in one line', async () => {
  const { code, err } = await admin(
    ['providers', 'check', '--stack', 'OtpStack'],
    [new AdminError('The deliver function failed (Error): The check event has unknown fields: code')],
  );
  expect(code).toBe(1);
  expect(err).toBe('admin: The deliver function failed (Error): The check event has unknown fields: code');
});

test.each([
  [['--stack', 'OtpStack', '--table', 'T'], /no --table or --endpoint with it/],
  [['--stack', 'Otp_Stack!'], /not a CloudFormation stack name/],
  [['--to', '12345'], /is not a valid number in E\.164/],
  [['--to', '+918123456789,+918123456780'], /two numbers of IN/],
])('refuses %j', async (extra, message) => {
  const { code, err, events } = await admin(['providers', 'check', ...extra], []);
  expect(code).toBe(2);
  expect(err).toMatch(message);
  expect(events.filter((event) => (event as { kind?: unknown }).kind)).toEqual([]);
});

test('--stack belongs to providers check only', async () => {
  const { code, err } = await admin(['service', 'show', 'VA0123', '--stack', 'OtpStack'], []);
  expect(code).toBe(2);
  expect(err).toMatch(/--stack does not apply to service show/);
});
