/**
 * A WhatsApp grant on the wrong ARN, end to end: the local stack with the real adapters against the provider
 * simulator, which authorizes each AWS call by the deliver role's synthesized statements. With the grant on the
 * ARN that keeps the phone number id's prefix, `SendWhatsAppMessage` is AccessDenied as on AWS: the send is still
 * one 201 and one charge, the next channel delivers, the `ProviderErrors` metric counts `access_denied`, and the
 * verification's timeline in the console names the refusal.
 */
import { EmfMetrics } from '../../functions/adapters/metrics';
import { METRIC, SERVICE_DIMENSION } from '../../functions/core/metrics';
import { ROUTES } from '../../functions/core/routing';
import type { IamStatement } from '../../local/iam';
import { startHarness, eventually, type Harness } from '../support/harness';
import { ACCOUNT, PHONE_NUMBER_ARN, PHONE_NUMBER_ID } from '../support/provider-simulator';
import { flushedEmf } from '../support/emf';

const SERVICE = 'otp-access-denied-test';
/** The ARN built from the id with its `phone-number-id-` prefix kept: no ARN AWS gives a phone number. */
const PREFIX_KEPT = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/${PHONE_NUMBER_ID}`;

let harness: Harness;
const metrics = new EmfMetrics({ serviceName: SERVICE });

/** The synthesized statements with every grant on the WhatsApp phone number moved to the wrong ARN. */
const wrongWhatsAppArn = (synthesized: IamStatement[]): IamStatement[] =>
  synthesized.map((statement) => ({
    ...statement,
    resources: statement.resources.map((resource) =>
      resource === PHONE_NUMBER_ARN ? PREFIX_KEPT : resource,
    ),
  }));

beforeAll(async () => {
  harness = await startHarness({
    providerSimulator: { grants: wrongWhatsAppArn },
    metrics,
    // Long enough that WhatsApp would be waited on if it had been taken; the refusal moves on at once.
    settings: { channelWaitSeconds: 2 },
  });
  // The first start after a change to lib/ synthesizes the stack for the simulator's grants.
}, 180_000);
afterAll(() => harness.close());

/** The EMF lines CloudWatch would read. */
const flush = () => flushedEmf(metrics);

async function consoleTimeline(serviceSid: string, sid: string) {
  const token = await harness.consoleToken('ops@example.com', true);
  const response = await fetch(
    `${harness.stack.url}/console/api/services/${serviceSid}/verifications/${sid}`,
    {
      headers: { authorization: `Bearer ${token}` },
    },
  );
  expect(response.status).toBe(200);
  return (await response.json()) as { entries: { kind: string; channel?: string; text: string }[] };
}

test('WhatsApp AccessDenied: falls through to RCS, counted, on the timeline; one 201, one charge', async () => {
  // In India, with these two channels, WhatsApp is the cheaper: it is tried first.
  const account = await harness.createAccount({ channels: ['whatsapp', 'rcs'] });
  const api = harness.client(account);
  const balance = async () => (await harness.accounts.getService(account.serviceSid))!.balance;
  const before = await balance();
  const to = '+919876512345';

  const sent = await api.send({ To: to });
  expect(sent.status).toBe(201);
  expect(sent.body.channel).toBe('whatsapp');
  const sid = sent.body.sid as string;
  const delivered = await eventually(
    async () => {
      const fetched = await api.fetch(sid);
      return fetched.body.delivery_status === 'DELIVERED' ? fetched.body : undefined;
    },
    15_000,
    50,
  );
  expect(delivered.channel).toBe('rcs');
  await harness.stack.workflow.idle();

  // One charge, the send's price, whatever was tried.
  expect(before - (await balance())).toBe(ROUTES.IN!.price);
  expect(sent.body.price).toBe('0.0150');
  // AWS refused the WhatsApp call; only RCS carried a message.
  const refusals = harness.stack.providerSimulator!.requests.filter((r) => r.provider === 'aws-whatsapp');
  expect(refusals.map((r) => [r.status, r.errorType])).toEqual([[403, 'AccessDeniedException']]);
  expect((await api.messages(to)).map((m) => [m.channel, m.provider, m.outcome])).toEqual([
    ['rcs', 'aws-sms', 'delivered'],
  ]);
  const checked = await api.check({ VerificationSid: sid, Code: await api.latestCode(to) });
  expect(checked.body.status).toBe('VERIFIED');

  // The metric an operator's alarm reads: one provider error, code access_denied.
  const lines = flush();
  const providerErrors = lines.filter((line) => METRIC.providerErrors in line);
  expect(
    providerErrors.map((line) => [line[SERVICE_DIMENSION], line.code, line[METRIC.providerErrors]]),
  ).toEqual([[SERVICE, 'access_denied', 1]]);

  // The console's timeline names the refusal on the WhatsApp attempt, then the move to RCS.
  const { entries } = await consoleTimeline(account.serviceSid, sid);
  const whatsapp = entries.find((entry) => entry.kind === 'attempt' && entry.channel === 'whatsapp');
  expect(whatsapp?.text).toMatch(/access_denied/);
  expect(whatsapp?.text).toContain('not authorized to perform: social-messaging:SendWhatsAppMessage');
  expect(entries.map((entry) => [entry.kind, entry.channel])).toEqual(
    expect.arrayContaining([
      ['attempt', 'whatsapp'],
      ['switch', 'rcs'],
      ['attempt', 'rcs'],
      ['receipt', 'rcs'],
    ]),
  );
  expect(entries.find((entry) => entry.kind === 'switch')?.text).toBe('Next channel at once: rcs');
}, 60_000);
