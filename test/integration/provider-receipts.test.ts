/**
 * AWS receipts as events: a send over the aws-sms or aws-whatsapp adapter (its real SDK client, to a local
 * stand-in endpoint), then the SNS notification for its reference, through the receipt handler, into DynamoDB Local. A delivered event makes the verification DELIVERED; a failure event, or one for a
 * message we did not send, changes nothing.
 */
import { whatsAppSnsEvent } from '../support/provider-events';
import { PinpointSMSVoiceV2Client } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import { SocialMessagingClient } from '@aws-sdk/client-socialmessaging';
import type { SNSEvent } from 'aws-lambda';
import { AwsSmsProvider } from '../../functions/adapters/providers/aws-sms';
import { AwsWhatsAppProvider } from '../../functions/adapters/providers/aws-whatsapp';
import { parseProviderConfig } from '../../functions/adapters/providers/config';
import { buildProviderRegistry } from '../../functions/adapters/providers/registry';
import type { Verification } from '../../functions/core/model';
import { buildSnsReceiptHandler, type EventReceiptDeps } from '../../functions/receipts/handlers';
import { eventually, startHarness, type ApiClient, type Harness } from '../support/harness';
import { startWireServer, type WireServer } from '../support/provider-wire';

const PROVIDERS = '{"sms":"aws-sms","whatsapp":"aws-whatsapp"}';
let harness: Harness;
let api: ApiClient;
let aws: WireServer;
let social: WireServer;
let deps: EventReceiptDeps;
let counter = 0;
// Routing is cheapest first (functions/core/routing.ts): in India SMS before WhatsApp, in the UK WhatsApp first.
const indianMobile = () => `+9198${String(100_000_000 + ++counter).slice(1)}`;
const ukMobile = () => `+447400${String(1_300_000 + ++counter).slice(1)}`;
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

beforeAll(async () => {
  aws = await startWireServer({
    status: 200,
    headers: { 'content-type': 'application/x-amz-json-1.0' },
    body: { MessageId: 'unused' },
  });
  social = await startWireServer({ status: 200, body: { messageId: 'unused' } });
  harness = await startHarness({ env: { OTP_PROVIDERS: PROVIDERS } });
  const sms = new AwsSmsProvider({
    originationIdentity: 'pool-0123456789abcdef',
    configurationSetName: 'otp-receipts',
    client: new PinpointSMSVoiceV2Client({
      endpoint: aws.url,
      region: 'us-east-1',
      credentials,
    }),
    now: () => harness.clock.now(),
  });
  const whatsApp = new AwsWhatsAppProvider({
    originationPhoneNumberId: 'phone-number-id-0123456789abcdef0123456789abcdef',
    templateName: 'otp_verification_code',
    client: new SocialMessagingClient({ endpoint: social.url, region: 'us-east-1', credentials }),
    now: () => harness.clock.now(),
  });
  // The deliver task's senders (functions/entries/deliver.ts builds them from the environment the same way).
  harness.stack.deps.providers = buildProviderRegistry(parseProviderConfig(PROVIDERS), {
    'aws-sms': sms,
    'aws-whatsapp': whatsApp,
  });
  deps = harness.stack.deps;
  api = harness.client(await harness.createAccount());
});
afterAll(async () => {
  await harness?.close();
  await aws?.close();
  await social?.close();
});

/** Sends over aws-sms (the only configured channel) and waits for the provider's answer to be recorded. */
async function sendAccepted(messageId: string): Promise<Verification> {
  aws.answer = { ...aws.answer, body: { MessageId: messageId } };
  const sent = await api.send({ To: indianMobile() });
  expect(sent.status).toBe(201);
  expect(sent.body.channel).toBe('sms');
  return eventually(async () => {
    const verification = await harness.stack.deps.store.getVerification(sent.body.sid as string);
    return verification?.deliveries['0']?.outcome === 'accepted' ? verification : undefined;
  });
}

const smsEvent = (eventType: string, messageId: string, reference: string) => ({
  eventType,
  eventVersion: '1.0',
  eventTimestamp: 1686975103470,
  isFinal: true,
  destinationPhoneNumber: '+447400300001',
  messageId,
  messageType: 'TRANSACTIONAL',
  context: { otpReference: reference },
});

/** An SNS notification as Lambda receives it from a topic subscription. */
const snsEvent = (message: unknown): SNSEvent => ({
  Records: [
    {
      EventSource: 'aws:sns',
      EventVersion: '1.0',
      EventSubscriptionArn: 'arn:aws:sns:us-east-1:111122223333:otp-sms-events:0d1e2f',
      Sns: {
        Type: 'Notification',
        MessageId: '95df01b4-ee98-5cb9-9903-4c221d41eb5e',
        TopicArn: 'arn:aws:sns:us-east-1:111122223333:otp-sms-events',
        Subject: '',
        Message: JSON.stringify(message),
        Timestamp: '2026-03-01T12:00:01.000Z',
        SignatureVersion: '1',
        Signature: 'EXAMPLE',
        SigningCertUrl:
          'https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem',
        UnsubscribeUrl: 'https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe',
        MessageAttributes: {},
      },
    },
  ],
});

test('the send went out over SendTextMessage with our reference in Context', async () => {
  const verification = await sendAccepted('sms-msg-0');
  // This send's request, not the last one: other tests' deliveries may still be moving between channels.
  const request = aws.requests.find((candidate) => candidate.body.includes(`${verification.sid}.0`))!;
  expect(request.headers['x-amz-target']).toBe('PinpointSMSVoiceV2.SendTextMessage');
  expect(JSON.parse(request.body)).toMatchObject({
    DestinationPhoneNumber: verification.to,
    Context: { otpReference: `${verification.sid}.0` },
    MessageType: 'TRANSACTIONAL',
  });
});

test('SNS: TEXT_DELIVERED for the reference makes it DELIVERED over sms', async () => {
  const verification = await sendAccepted('sms-msg-1');
  const handler = buildSnsReceiptHandler(deps);
  await expect(
    handler(snsEvent(smsEvent('TEXT_DELIVERED', 'sms-msg-1', `${verification.sid}.0`))),
  ).resolves.toEqual(['applied']);
  const fetched = await api.fetch(verification.sid);
  expect(fetched.body).toMatchObject({ delivery_status: 'DELIVERED', channel: 'sms' });
  // A duplicate changes nothing.
  await expect(
    handler(snsEvent(smsEvent('TEXT_DELIVERED', 'sms-msg-1', `${verification.sid}.0`))),
  ).resolves.toEqual(['duplicate']);
});

test('SNS: a failure event settles nothing; a receipt for another message or an attempt never made is unknown', async () => {
  const verification = await sendAccepted('sms-msg-2');
  const handler = buildSnsReceiptHandler(deps);
  // A failure ends the channel's wait (the state machine's next read moves on), and settles nothing.
  await expect(
    handler(snsEvent(smsEvent('TEXT_BLOCKED', 'sms-msg-2', `${verification.sid}.0`))),
  ).resolves.toEqual(['applied']);
  await expect(
    handler(snsEvent(smsEvent('TEXT_DELIVERED', 'other-msg', `${verification.sid}.0`))),
  ).resolves.toEqual(['unknown']);
  await expect(
    handler(snsEvent(smsEvent('TEXT_DELIVERED', 'sms-msg-2', `${verification.sid}.3`))),
  ).resolves.toEqual(['unknown']);
  // Pending events are no receipt at all.
  await expect(
    handler(snsEvent(smsEvent('TEXT_QUEUED', 'sms-msg-2', `${verification.sid}.0`))),
  ).resolves.toEqual([]);
  const fetched = await api.fetch(verification.sid);
  expect(fetched.body.delivery_status).not.toBe('DELIVERED');
});

test('SNS: a non-final TEXT_SUCCESSFUL settles nothing, so the failure after it is not hidden', async () => {
  const verification = await sendAccepted('sms-msg-5');
  const reference = `${verification.sid}.0`;
  const handler = buildSnsReceiptHandler(deps);
  await expect(
    handler(snsEvent({ ...smsEvent('TEXT_SUCCESSFUL', 'sms-msg-5', reference), isFinal: false })),
  ).resolves.toEqual([]);
  expect((await api.fetch(verification.sid)).body.delivery_status).not.toBe('DELIVERED');
  // The final failure is taken: it ends the channel's wait (provider-failure-receipt.test.ts).
  await expect(handler(snsEvent(smsEvent('TEXT_BLOCKED', 'sms-msg-5', reference)))).resolves.toEqual([
    'applied',
  ]);
  expect((await api.fetch(verification.sid)).body.delivery_status).not.toBe('DELIVERED');
});

test('SNS: a final TEXT_SUCCESSFUL (no delivery report in that country) makes it DELIVERED', async () => {
  const verification = await sendAccepted('sms-msg-6');
  const handler = buildSnsReceiptHandler(deps);
  await expect(
    handler(snsEvent(smsEvent('TEXT_SUCCESSFUL', 'sms-msg-6', `${verification.sid}.0`))),
  ).resolves.toEqual(['applied']);
  expect((await api.fetch(verification.sid)).body).toMatchObject({
    delivery_status: 'DELIVERED',
    channel: 'sms',
  });
});

test('an HTTP callback to /v2/Callbacks/aws-sms is refused: AWS receipts come only as events', async () => {
  const response = await fetch(`${harness.stack.url}/v2/Callbacks/aws-sms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(smsEvent('TEXT_DELIVERED', 'sms-msg-1', 'VE0123456789abcdef0123456789abcdef.0')),
  });
  expect(response.status).toBe(401);
});

/** Sends over aws-whatsapp (a UK number: WhatsApp is its cheapest channel) and waits for the answer's record. */
async function sendWhatsAppAccepted(messageId: string): Promise<Verification> {
  social.answer = { ...social.answer, body: { messageId } };
  const sent = await api.send({ To: ukMobile() });
  expect(sent.status).toBe(201);
  expect(sent.body.channel).toBe('whatsapp');
  return eventually(async () => {
    const verification = await harness.stack.deps.store.getVerification(sent.body.sid as string);
    return verification?.deliveries['0']?.outcome === 'accepted' ? verification : undefined;
  });
}

test('the WhatsApp send went out over SendWhatsAppMessage with our reference as biz_opaque_callback_data', async () => {
  const verification = await sendWhatsAppAccepted('a1b2c3d4-0000-4000-8000-000000000000');
  // This send's request, not the last one: another test's delivery may fall back to WhatsApp meanwhile.
  const decoded = social.requests.map((candidate) => {
    const body = JSON.parse(candidate.body) as { message: string; originationPhoneNumberId: string };
    const message = JSON.parse(Buffer.from(body.message, 'base64').toString('utf8')) as Record<
      string,
      unknown
    >;
    return { request: candidate, body, message };
  });
  const found = decoded.find((entry) => entry.message.biz_opaque_callback_data === `${verification.sid}.0`);
  expect(found).toBeDefined();
  const { request, body, message } = found!;
  expect(request.path).toBe('/v1/whatsapp/send');
  expect(body.originationPhoneNumberId).toBe('phone-number-id-0123456789abcdef0123456789abcdef');
  expect(message).toMatchObject({ to: verification.to, biz_opaque_callback_data: `${verification.sid}.0` });
});

test("SNS: a WhatsApp delivered status for the reference, with AWS's message id, makes it DELIVERED over whatsapp", async () => {
  const messageId = 'a1b2c3d4-0000-4000-8000-000000000001';
  const verification = await sendWhatsAppAccepted(messageId);
  const handler = buildSnsReceiptHandler(deps);
  const reference = `${verification.sid}.0`;
  await expect(
    handler(snsEvent(whatsAppSnsEvent({ status: 'sent', reference, messageId }))),
  ).resolves.toEqual([]);
  await expect(
    handler(snsEvent(whatsAppSnsEvent({ status: 'delivered', reference, messageId }))),
  ).resolves.toEqual(['applied']);
  expect((await api.fetch(verification.sid)).body).toMatchObject({
    delivery_status: 'DELIVERED',
    channel: 'whatsapp',
  });
  // `read` after `delivered` changes nothing more.
  await expect(
    handler(snsEvent(whatsAppSnsEvent({ status: 'read', reference, messageId }))),
  ).resolves.toEqual(['duplicate']);
});

test("SNS: a WhatsApp status without AWS's message id is for the message recorded on the attempt it names", async () => {
  const verification = await sendWhatsAppAccepted('a1b2c3d4-0000-4000-8000-000000000002');
  const handler = buildSnsReceiptHandler(deps);
  await expect(
    handler(
      snsEvent(
        whatsAppSnsEvent({ status: 'read', reference: `${verification.sid}.0`, messageId: undefined }),
      ),
    ),
  ).resolves.toEqual(['applied']);
  expect((await api.fetch(verification.sid)).body).toMatchObject({
    delivery_status: 'DELIVERED',
    channel: 'whatsapp',
  });
});

// No AWS document promises that the event header's `messageId` is the id SendWhatsAppMessage answered; the status's
// `biz_opaque_callback_data` is ours and names the attempt, so the header's id is not what matches.
test("SNS: a WhatsApp status is matched by its reference, whatever AWS's header messageId says", async () => {
  const verification = await sendWhatsAppAccepted('a1b2c3d4-0000-4000-8000-000000000004');
  const handler = buildSnsReceiptHandler(deps);
  await expect(
    handler(
      snsEvent(
        whatsAppSnsEvent({
          status: 'delivered',
          reference: `${verification.sid}.0`,
          messageId: 'a-header-id-that-is-not-the-send-answer',
        }),
      ),
    ),
  ).resolves.toEqual(['applied']);
  expect((await api.fetch(verification.sid)).body).toMatchObject({
    delivery_status: 'DELIVERED',
    channel: 'whatsapp',
  });
});

test('SNS: a WhatsApp failure settles nothing; an SMS attempt or an attempt never made is unknown', async () => {
  const messageId = 'a1b2c3d4-0000-4000-8000-000000000003';
  const verification = await sendWhatsAppAccepted(messageId);
  const reference = `${verification.sid}.0`;
  const handler = buildSnsReceiptHandler(deps);
  await expect(
    handler(snsEvent(whatsAppSnsEvent({ status: 'failed', reference, messageId }))),
  ).resolves.toEqual(['applied']);
  await expect(
    handler(
      snsEvent(
        whatsAppSnsEvent({ status: 'delivered', reference: `${verification.sid}.1`, messageId: undefined }),
      ),
    ),
  ).resolves.toEqual(['unknown']);
  // The reference of an SMS attempt in a WhatsApp status (no message id to compare): not WhatsApp's attempt.
  const sms = await sendAccepted('sms-msg-4');
  await expect(
    handler(
      snsEvent(whatsAppSnsEvent({ status: 'delivered', reference: `${sms.sid}.0`, messageId: undefined })),
    ),
  ).resolves.toEqual(['unknown']);
  expect((await api.fetch(verification.sid)).body.delivery_status).not.toBe('DELIVERED');
  expect((await api.fetch(sms.sid)).body.delivery_status).not.toBe('DELIVERED');
});
