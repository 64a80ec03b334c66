/**
 * `npm run admin -- providers check` against the local stack with the provider simulator (`npm start --
 * --providers`): the deliver function's check event, run with its settings and under its synthesized grants,
 * judged by the simulator as AWS would judge it. A correct deployment passes; a wrong grant fails by channel and
 * country with AWS's own error; India without its DLT setting is reported, and a real send there falls through
 * to the next channel, one 201 and one charge. Nothing reaches the simulated carrier. (The service-model case,
 * a ValidationException from a bad request, is in test/models/providers-check-models.test.ts.)
 */
import { runAdmin } from '../../scripts/admin/cli';
import type { CheckRow, ProviderCheckReport } from '../../functions/core/provider-check';
import { InMemoryMetrics, METRIC } from '../../functions/core/metrics';
import type { IamStatement } from '../../local/iam';
import { eventually, startHarness, type Harness } from '../support/harness';

const ACCOUNT = '000000000000';
const PHONE_NUMBER_ARN = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/0123456789abcdef0123456789abcdef`;
const PREFIX_KEPT = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/phone-number-id-0123456789abcdef0123456789abcdef`;
const CONFIGURATION_SET = `arn:aws:sms-voice:us-east-1:${ACCOUNT}:configuration-set/otp-local-receipts`;

const harnesses: Harness[] = [];
afterAll(() => Promise.all(harnesses.map((harness) => harness.close())));

async function harnessWith(options: Parameters<typeof startHarness>[0]): Promise<Harness> {
  const harness = await startHarness(options);
  harnesses.push(harness);
  return harness;
}

/** The admin command as an operator runs it against this running local stack: `--json`, and the text when asked. */
async function providersCheck(harness: Harness, options: { text?: boolean } = {}, ...extra: string[]) {
  const out: string[] = [];
  const io = { out: (line: string) => out.push(line), err: (line: string) => out.push(line) };
  const readLocalStack = () => ({
    baseUrl: harness.stack.url,
    dynamoEndpoint: 'unused',
    tableName: harness.tableName,
  });
  const code = await runAdmin(['providers', 'check', '--json', ...extra], io, { readLocalStack });
  const report = JSON.parse(out[0]!) as ProviderCheckReport;
  let text = '';
  if (options.text) {
    expect(await runAdmin(['providers', 'check', ...extra], io, { readLocalStack })).toBe(code);
    text = out[1]!;
  }
  return { code, text, report };
}

const key = (row: CheckRow) => `${row.channel} ${row.country} ${row.provider} ${row.check}`;
const failures = (report: ProviderCheckReport) => report.rows.filter((row) => !row.ok);

test('a correct deployment passes every check, and nothing reaches anyone', async () => {
  const harness = await harnessWith({ providerSimulator: true });
  const { code, text, report } = await providersCheck(harness, { text: true }, '--to', '+918123400000');
  expect(failures(report)).toEqual([]);
  expect(code).toBe(0);
  const rows = report.rows.map(key);
  // Every country aws-sms carries sms to (France's sms is Vonage's), the RCS agent's countries, WhatsApp once.
  expect(rows).toContain('sms IN aws-sms DryRun SendTextMessage');
  expect(rows).toContain('sms US aws-sms DryRun SendTextMessage');
  expect(rows).not.toContain('sms FR aws-sms DryRun SendTextMessage');
  expect(rows).toContain('rcs US aws-sms DryRun SendTextMessage');
  expect(rows).toContain('whatsapp * aws-whatsapp GetLinkedWhatsAppBusinessAccountPhoneNumber');
  for (const check of ['application id', 'private key', 'signature secret', 'sender'])
    expect(rows).toContain(`viber * vonage ${check}`);
  expect(rows).toContain('sms * vonage private key');
  // The number given for India; the example mobile number elsewhere.
  expect(report.rows.find((row) => key(row) === 'sms IN aws-sms DryRun SendTextMessage')!.detail).toContain(
    '+918123400000',
  );
  expect(report.notChecked).toEqual([{ channel: 'sna', provider: 'http-carrier' }]);
  expect(report.cannotCheck.vonage!.join(' ')).toContain('Vonage is not called');
  expect(text).toMatch(/Nothing was sent\./);
  expect(text).toMatch(
    /^sms +IN +aws-sms +DryRun SendTextMessage +pass +to \+918123400000: accepted, not sent$/m,
  );
  expect(text).toMatch(/checks passed\.$/);
  // Dry runs and reads only: the simulated carrier carried nothing, and no receipt is on its way.
  expect(harness.stack.carrier.messagesTo(undefined)).toEqual([]);
  expect(harness.stack.providerSimulator!.requests.every((request) => request.status < 300)).toBe(true);
}, 120_000);

test('a wrong WhatsApp ARN and a missing configuration-set grant fail by channel and country with AWS’s error', async () => {
  const grants = (synthesized: IamStatement[]) =>
    synthesized.map((statement) => ({
      ...statement,
      resources: statement.resources
        .filter((resource) => resource !== CONFIGURATION_SET)
        .map((resource) => (resource === PHONE_NUMBER_ARN ? PREFIX_KEPT : resource)),
    }));
  const harness = await harnessWith({ providerSimulator: { grants } });
  const { code, text, report } = await providersCheck(harness, { text: true });
  expect(code).toBe(1);
  const whatsApp = report.rows.find((row) => row.channel === 'whatsapp' && row.provider === 'aws-whatsapp')!;
  expect(whatsApp).toMatchObject({ country: '*', ok: false });
  expect(whatsApp.detail).toBe(
    `AccessDeniedException: User: arn:aws:sts::${ACCOUNT}:assumed-role/OtpLocal-DeliverRole/otp-deliver is not ` +
      'authorized to perform: social-messaging:GetLinkedWhatsAppBusinessAccountPhoneNumber on resource: ' +
      `${PHONE_NUMBER_ARN} because no identity-based policy allows the ` +
      'social-messaging:GetLinkedWhatsAppBusinessAccountPhoneNumber action',
  );
  const sms = report.rows.filter((row) => row.provider === 'aws-sms');
  expect(sms.length).toBeGreaterThan(30);
  for (const row of sms) {
    expect(row.ok).toBe(false);
    expect(row.detail).toMatch(
      new RegExp(
        `^to \\+\\d+: AccessDeniedException: .* sms-voice:SendTextMessage on resource: ${CONFIGURATION_SET} `,
      ),
    );
  }
  // Vonage's checks do not depend on AWS's grants.
  expect(report.rows.filter((row) => row.provider === 'vonage').every((row) => row.ok)).toBe(true);
  expect(text).toMatch(/^whatsapp {2}all but FR +aws-whatsapp +GetLinked\w+ +FAIL +AccessDeniedException: /m);
  expect(text).toMatch(/checks failed: those channels fall through/);
  expect(harness.stack.carrier.messagesTo(undefined)).toEqual([]);
}, 120_000);

describe('India without its DLT setting', () => {
  const metrics = new InMemoryMetrics();
  let harness: Harness;
  beforeAll(async () => {
    harness = await harnessWith({
      providerSimulator: true,
      metrics,
      settings: { channelWaitSeconds: 2 },
      env: { OTP_AWS_SMS_REGISTERED_TEMPLATES: '' },
    });
  }, 120_000);

  test('providers check reports it for India’s SMS, with the simulator’s ValidationException', async () => {
    const { code, report } = await providersCheck(harness);
    expect(code).toBe(1);
    expect(failures(report).map(key)).toEqual([
      'sms IN aws-sms India DLT template',
      'sms IN aws-sms DryRun SendTextMessage',
    ]);
    const [setting, dryRun] = failures(report);
    expect(setting!.detail).toContain('otp:awsSmsRegisteredTemplates.IN');
    expect(dryRun!.detail).toMatch(
      /^to \+91\d+: ValidationException: .*DestinationCountryParameters IN_ENTITY_ID and IN_TEMPLATE_ID \(MISSING_PARAMETER\)/,
    );
    // India's RCS is no carrier SMS: the DLT rule is not its.
    expect(report.rows.find((row) => key(row) === 'rcs IN aws-sms DryRun SendTextMessage')!.ok).toBe(true);
  }, 120_000);

  test('a send falls through to the next channel: one 201, one charge, the failure counted and named', async () => {
    const service = await harness.createAccount();
    const api = harness.client(service);
    const to = '+919876512345';
    harness.stack.carrier.setRule({ prefix: '+91', channels: { whatsapp: { deliver: 100 } } });
    const before = (await harness.accounts.getService(service.serviceSid))!.balance;
    const sent = await api.send({ To: to });
    expect(sent.status).toBe(201);
    const sid = sent.body.sid as string;
    const delivered = await eventually(async () => {
      const response = await api.fetch(sid);
      return response.body.delivery_status === 'DELIVERED' ? response.body : undefined;
    }, 15_000);
    expect(delivered.channel).toBe('whatsapp');
    // The refused SMS never reached the carrier: WhatsApp's message is the only one.
    expect((await api.messages(to)).map((message) => [message.channel, message.provider])).toEqual([
      ['whatsapp', 'aws-whatsapp'],
    ]);
    expect(metrics.total(METRIC.providerErrors, { code: 'invalid_request' })).toBe(1);
    const record = (await harness.scanTable()).find(
      (item) => item.sid === sid && typeof item.deliveries === 'object',
    ) as { deliveries: Record<string, { channel: string; outcome: string; reason?: string }> } | undefined;
    expect(record?.deliveries['0']).toMatchObject({ channel: 'sms', outcome: 'failed' });
    expect(record?.deliveries['0']?.reason).toContain('IN_ENTITY_ID');
    const after = (await harness.accounts.getService(service.serviceSid))!.balance;
    expect(before - after).toBe(150);
  }, 60_000);
});
