/**
 * A failure receipt ends its channel's wait: the state machine's status reads (1, 2, 4 s into the 8 s wait) see
 * the mark the receipt left and move to the next channel then, not after the whole wait. Through the real state
 * machine (local/workflow.ts runs statemachine/delivery.asl.json), the aws-sms adapter against a stand-in
 * endpoint, and the SNS receipt handler.
 */
import { PinpointSMSVoiceV2Client } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import { SocialMessagingClient } from '@aws-sdk/client-socialmessaging';
import type { SNSEvent } from 'aws-lambda';
import { AwsSmsProvider } from '../../functions/adapters/providers/aws-sms';
import { AwsWhatsAppProvider } from '../../functions/adapters/providers/aws-whatsapp';
import { parseProviderConfig } from '../../functions/adapters/providers/config';
import { buildProviderRegistry } from '../../functions/adapters/providers/registry';
import { buildSnsReceiptHandler } from '../../functions/receipts/handlers';
import { eventually, startHarness, type Harness } from '../support/harness';
import { startWireServer, type WireServer } from '../support/provider-wire';

const PROVIDERS = '{"sms":"aws-sms","whatsapp":"aws-whatsapp"}';
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
let harness: Harness;
let aws: WireServer;
let social: WireServer;

beforeAll(async () => {
  aws = await startWireServer({
    status: 200,
    headers: { 'content-type': 'application/x-amz-json-1.0' },
    body: { MessageId: 'sms-failing' },
  });
  social = await startWireServer({ status: 200, body: { messageId: 'wa-next' } });
  harness = await startHarness({ env: { OTP_PROVIDERS: PROVIDERS }, settings: { channelWaitSeconds: 8 } });
  harness.stack.deps.providers = buildProviderRegistry(parseProviderConfig(PROVIDERS), {
    'aws-sms': new AwsSmsProvider({
      originationIdentity: 'pool-0123456789abcdef',
      client: new PinpointSMSVoiceV2Client({ endpoint: aws.url, region: 'us-east-1', credentials }),
      now: () => harness.clock.now(),
    }),
    'aws-whatsapp': new AwsWhatsAppProvider({
      originationPhoneNumberId: 'phone-number-id-0123456789abcdef0123456789abcdef',
      templateName: 'otp_verification_code',
      client: new SocialMessagingClient({ endpoint: social.url, region: 'us-east-1', credentials }),
      now: () => harness.clock.now(),
    }),
  });
});
afterAll(async () => {
  await harness?.close();
  await aws?.close();
  await social?.close();
});

const snsEvent = (message: unknown) =>
  ({ Records: [{ Sns: { Message: JSON.stringify(message) } }] }) as unknown as SNSEvent;

test('a final TEXT_BLOCKED moves delivery to the next channel at the next status read, not after 8 s', async () => {
  const api = harness.client(await harness.createAccount());
  // India: SMS first, WhatsApp next (functions/core/routing.ts).
  const sent = await api.send({ To: '+919812300001' });
  expect(sent.status).toBe(201);
  const sid = sent.body.sid as string;
  await eventually(async () => {
    const verification = await harness.stack.deps.store.getVerification(sid);
    return verification?.deliveries['0'] ? true : undefined;
  });
  const receivedAt = Date.now();
  await expect(
    buildSnsReceiptHandler(harness.stack.deps)(
      snsEvent({
        eventType: 'TEXT_BLOCKED',
        isFinal: true,
        messageId: 'sms-failing',
        context: { otpReference: `${sid}.0` },
      }),
    ),
  ).resolves.toEqual(['applied']);
  const next = await eventually(async () => {
    const verification = await harness.stack.deps.store.getVerification(sid);
    return verification?.deliveries['1'];
  }, 12_000);
  expect(next.channel).toBe('whatsapp');
  // The reads come 1, 2 and 4 s into the wait: the next channel by then, well before the 8 s.
  expect(Date.now() - receivedAt).toBeLessThan(5_500);
}, 30_000);
