/**
 * The AWS adapters put on the wire exactly what End User Messaging takes: each is sent through the real SDK client
 * to a local server given as its `endpoint`, which records the request. Receipts are parsed from AWS's documented
 * sample events.
 */
import { whatsAppSnsEvent } from '../support/provider-events';
import { PinpointSMSVoiceV2Client } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import { SocialMessagingClient } from '@aws-sdk/client-socialmessaging';
import { parseAwsSnsMessage, parseSmsEvent } from '../../functions/adapters/providers/aws-events';
import { AwsSmsProvider } from '../../functions/adapters/providers/aws-sms';
import { AWS_CALL_LIMITS } from '../../functions/adapters/aws-client-config';
import { readRegisteredTemplates } from '../../functions/adapters/providers/registered-templates';
import { AwsWhatsAppProvider } from '../../functions/adapters/providers/aws-whatsapp';
import type { OutboundMessage } from '../../functions/core/providers';
import { startWireServer, type WireServer } from '../support/provider-wire';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
const now = new Date('2026-03-01T12:00:00Z');
const message = (overrides: Partial<OutboundMessage> = {}): OutboundMessage => ({
  channel: 'sms',
  to: '+14155550100',
  body: 'Your code is 482913.',
  code: '482913',
  reference: 'VE0123456789abcdef0123456789abcdef.0',
  // 4 min 10 s of life left
  expiresAt: '2026-03-01T12:04:10Z',
  ...overrides,
});

let server: WireServer;
beforeAll(async () => {
  server = await startWireServer({ status: 200, body: {} });
});
afterAll(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
});

describe('aws-sms', () => {
  const provider = () =>
    new AwsSmsProvider({
      originationIdentity: 'pool-0123456789abcdef',
      rcsOriginationIdentity: 'arn:aws:sms-voice:us-east-1:111122223333:rcs-agent/agent-1',
      configurationSetName: 'otp-receipts',
      protectConfigurationId: 'protect-1',
      maxPrice: '0.20',
      client: new PinpointSMSVoiceV2Client({ endpoint: server.url, region: 'us-east-1', credentials }),
      now: () => now,
    });

  test('sms: SendTextMessage, awsJson1_0, transactional, TTL = the code’s remaining life, our reference', async () => {
    server.answer = {
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: { MessageId: 'msg-1' },
    };
    await expect(provider().send(message())).resolves.toEqual({ status: 'accepted', messageId: 'msg-1' });
    const [request] = server.requests;
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/');
    expect(request!.headers['x-amz-target']).toBe('PinpointSMSVoiceV2.SendTextMessage');
    expect(request!.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(request!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/sms-voice\//,
    );
    expect(JSON.parse(request!.body)).toEqual({
      DestinationPhoneNumber: '+14155550100',
      OriginationIdentity: 'pool-0123456789abcdef',
      MessageBody: 'Your code is 482913.',
      MessageType: 'TRANSACTIONAL',
      TimeToLive: 250,
      Context: { otpReference: 'VE0123456789abcdef0123456789abcdef.0' },
      ConfigurationSetName: 'otp-receipts',
      ProtectConfigurationId: 'protect-1',
      MaxPrice: '0.20',
    });
  });

  test('rcs: the same operation from the RCS agent alone (no AWS-side SMS fallback)', async () => {
    server.answer = {
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: { MessageId: 'msg-2' },
    };
    await provider().send(message({ channel: 'rcs', reference: 'VE0123456789abcdef0123456789abcdef.1' }));
    const body = JSON.parse(server.requests[0]!.body) as Record<string, unknown>;
    expect(server.requests[0]!.headers['x-amz-target']).toBe('PinpointSMSVoiceV2.SendTextMessage');
    expect(body.OriginationIdentity).toBe('arn:aws:sms-voice:us-east-1:111122223333:rcs-agent/agent-1');
    expect(body.Context).toEqual({ otpReference: 'VE0123456789abcdef0123456789abcdef.1' });
    expect(body.TimeToLive).toBe(250);
  });

  test('an opted-out number is a rejection; throttling and other errors are thrown', async () => {
    server.answer = {
      status: 400,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: {
        __type: 'ConflictException',
        Message: 'opted out',
        Reason: 'DESTINATION_PHONE_NUMBER_OPTED_OUT',
      },
    };
    await expect(provider().send(message())).resolves.toEqual({
      status: 'rejected',
      reason: 'DESTINATION_PHONE_NUMBER_OPTED_OUT',
    });
    server.answer = {
      status: 400,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: { __type: 'ThrottlingException', Message: 'Rate exceeded' },
    };
    await expect(provider().send(message())).rejects.toThrow(/Rate exceeded/);
  });

  const conflict = (Reason: string) => ({
    status: 400,
    headers: { 'content-type': 'application/x-amz-json-1.0' },
    body: { __type: 'ConflictException', Message: 'refused', Reason },
  });

  // ConflictExceptionReason (@aws-sdk/client-pinpoint-sms-voice-v2's enums, from the service model).
  test('a number blocked by a protect-number override is a rejection of the number, like an opt-out', async () => {
    server.answer = conflict('DESTINATION_PHONE_NUMBER_BLOCKED_BY_PROTECT_NUMBER_OVERRIDE');
    await expect(provider().send(message())).resolves.toEqual({
      status: 'rejected',
      reason: 'DESTINATION_PHONE_NUMBER_BLOCKED_BY_PROTECT_NUMBER_OVERRIDE',
    });
  });

  test('the sandbox, MaxPrice, permissions and throttling are provider errors with a code', async () => {
    server.answer = conflict('DESTINATION_PHONE_NUMBER_NOT_VERIFIED');
    await expect(provider().send(message())).rejects.toMatchObject({
      name: 'ProviderError',
      code: 'sandbox_destination_not_verified',
    });
    server.answer = {
      status: 400,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: { __type: 'ValidationException', Message: 'too dear', Reason: 'PRICE_OVER_THRESHOLD' },
    };
    await expect(provider().send(message())).rejects.toMatchObject({ code: 'price_over_threshold' });
    server.answer = {
      status: 400,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: { __type: 'AccessDeniedException', Message: 'not authorized' },
    };
    await expect(provider().send(message())).rejects.toMatchObject({ code: 'access_denied' });
    // ServiceQuotaExceededExceptionReason (the SDK's enums): the account's monthly spend limit.
    for (const reason of ['MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT', 'MONTHLY_SPEND_LIMIT_REACHED_FOR_RCS']) {
      server.answer = {
        status: 400,
        headers: { 'content-type': 'application/x-amz-json-1.0' },
        body: { __type: 'ServiceQuotaExceededException', Message: 'spent', Reason: reason },
      };
      await expect(provider().send(message())).rejects.toMatchObject({ code: 'monthly_spend_limit' });
    }
  });

  test('India: the registered DLT text with the code, and its ids as DestinationCountryParameters', () => {
    const registered = new AwsSmsProvider({
      originationIdentity: 'pool-0123456789abcdef',
      rcsOriginationIdentity: 'arn:aws:sms-voice:us-east-1:111122223333:rcs-agent/agent-1',
      registeredTemplates: readRegisteredTemplates(
        {
          IN: {
            entityId: '1101456789012345678',
            templateId: '1107161234567890123',
            text: '{code} is your Acme verification code. Do not share it.',
          },
        },
        'test',
      ),
      now: () => now,
    });
    const india = message({ to: '+919812345678', country: 'IN', body: 'Your code is 482913.' });
    expect(registered.request(india)).toMatchObject({
      MessageBody: '482913 is your Acme verification code. Do not share it.',
      DestinationCountryParameters: {
        IN_ENTITY_ID: '1101456789012345678',
        IN_TEMPLATE_ID: '1107161234567890123',
      },
    });
    // Elsewhere, and for RCS (no carrier SMS), the service's own message.
    for (const other of [message({ country: 'GB' }), { ...india, channel: 'rcs' as const }]) {
      const request = registered.request(other);
      expect(request.MessageBody).toBe('Your code is 482913.');
      expect(request).not.toHaveProperty('DestinationCountryParameters');
    }
  });

  test('a registered template must be for a country AWS takes parameters for, with {code} once', () => {
    const read = (json: unknown) => () => readRegisteredTemplates(json, 'X');
    expect(read({ GB: { entityId: 'a', templateId: 'b', text: '{code}' } })).toThrow(/IN only/);
    expect(read({ IN: { entityId: 'a', templateId: 'b', text: 'Your code' } })).toThrow(/\{code\} once/);
    expect(read({ IN: { entityId: 'a b', templateId: 'b', text: '{code}' } })).toThrow(/entityId/);
    expect(read({ IN: { entityId: 'a', templateId: 'x'.repeat(65), text: '{code}' } })).toThrow(/templateId/);
  });

  // The model's TextMessageBody is 1 to 1600 characters: the text sent, with a caller's code of up to 10
  // characters where the 6 of `{code}` were. A text AWS would refuse with every code that long is refused here.
  test('a registered text is within MessageBody’s 1600 characters with the longest code in it', () => {
    const registered = (length: number) =>
      readRegisteredTemplates(
        { IN: { entityId: 'a', templateId: 'b', text: `{code}${'x'.repeat(length - '{code}'.length)}` } },
        'X',
      );
    const body = (template: ReturnType<typeof registered>) =>
      new AwsSmsProvider({
        originationIdentity: 'pool-1',
        registeredTemplates: template,
        now: () => now,
      }).request(message({ to: '+919812345678', country: 'IN', code: 'ABCDE12345' })).MessageBody!;
    expect(body(registered(1596))).toHaveLength(1600);
    expect(() => registered(1600)).toThrow(/1600 characters/);
  });

  // The client's own limits (aws-client-config.ts): a send AWS does not answer in 5 s is given up, before the 8 s switch.
  test('a send that gets no answer is given up after the request time-out, as a timeout', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' });
    server.answer = { status: 200, body: { MessageId: 'late' }, delayMs: 20_000 };
    const own = new AwsSmsProvider({
      originationIdentity: 'pool-0123456789abcdef',
      endpoint: server.url,
      region: 'us-east-1',
      now: () => now,
    });
    const started = Date.now();
    try {
      await expect(own.send(message())).rejects.toMatchObject({ code: 'timeout' });
    } finally {
      process.env = saved;
    }
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(
      AWS_CALL_LIMITS['@aws-sdk/client-pinpoint-sms-voice-v2'].requestTimeoutMs - 100,
    );
    expect(took).toBeLessThan(8_000);
  }, 15_000);

  test('a code about to expire is not sent (TTL below AWS’s 5 s)', async () => {
    await expect(provider().send(message({ expiresAt: '2026-03-01T12:00:03Z' }))).rejects.toThrow(/too soon/);
    expect(server.requests).toHaveLength(0);
  });

  test('HTTP callbacks are never believed (receipts come only from SNS)', () => {
    expect(provider().parseReceipt()).toBeUndefined();
  });
});

describe('aws-whatsapp', () => {
  const provider = () =>
    new AwsWhatsAppProvider({
      originationPhoneNumberId: 'phone-number-id-976c72a700aac43eaf573ae050example',
      templateName: 'otp_code',
      templateLanguage: 'en_US',
      metaApiVersion: 'v20.0',
      client: new SocialMessagingClient({ endpoint: server.url, region: 'us-east-1', credentials }),
      now: () => now,
    });

  test('SendWhatsAppMessage: an authentication template with a copy-code button, TTL within the code’s life', async () => {
    server.answer = { status: 200, body: { messageId: 'wa-1' } };
    await expect(provider().send(message({ channel: 'whatsapp' }))).resolves.toEqual({
      status: 'accepted',
      messageId: 'wa-1',
    });
    const [request] = server.requests;
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/v1/whatsapp/send');
    const body = JSON.parse(request!.body) as {
      originationPhoneNumberId: string;
      metaApiVersion: string;
      message: string;
    };
    expect(body.originationPhoneNumberId).toBe('phone-number-id-976c72a700aac43eaf573ae050example');
    expect(body.metaApiVersion).toBe('v20.0');
    // The blob travels base64-encoded in the JSON body.
    expect(JSON.parse(Buffer.from(body.message, 'base64').toString('utf8'))).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '+14155550100',
      type: 'template',
      biz_opaque_callback_data: 'VE0123456789abcdef0123456789abcdef.0',
      template: {
        name: 'otp_code',
        language: { code: 'en_US' },
        components: [
          { type: 'body', parameters: [{ type: 'text', text: '482913' }] },
          { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: '482913' }] },
        ],
      },
    });
  });

  test('the code fills the template as data: other digits in the text and a caller’s letters do not matter', async () => {
    server.answer = { status: 200, body: { messageId: 'wa-3' } };
    for (const [body, code] of [
      ['Order 20261126: your code is 482913.', '482913'],
      ['Your code is AB12CD.', 'AB12CD'],
    ] as const)
      await provider().send(message({ channel: 'whatsapp', body, code }));
    const parameters = server.requests.map((request) => {
      const sent = JSON.parse(request.body) as { message: string };
      const whatsApp = JSON.parse(Buffer.from(sent.message, 'base64').toString('utf8')) as {
        template: { components: { parameters: { text: string }[] }[] };
      };
      return whatsApp.template.components.map((component) => component.parameters[0]!.text);
    });
    expect(parameters).toEqual([
      ['482913', '482913'],
      ['AB12CD', 'AB12CD'],
    ]);
  });

  // Meta, "Configure message time-to-live": an authentication template's TTL (`message_send_ttl_seconds`) is set
  // on the template (POST …/message_templates), not per message; the message carries none.
  test('no per-message TTL (it is the template’s), and no send under Meta’s 30 s minimum', async () => {
    server.answer = { status: 200, body: { messageId: 'wa-2' } };
    await provider().send(message({ channel: 'whatsapp', expiresAt: '2026-03-01T13:00:00Z' }));
    const sent = JSON.parse(server.requests[0]!.body) as { message: string };
    const template = (
      JSON.parse(Buffer.from(sent.message, 'base64').toString('utf8')) as {
        template: Record<string, unknown>;
      }
    ).template;
    expect(Object.keys(template).sort()).toEqual(['components', 'language', 'name']);
    await expect(
      provider().send(message({ channel: 'whatsapp', expiresAt: '2026-03-01T12:00:20Z' })),
    ).rejects.toThrow(/30 s minimum/);
    expect(server.requests).toHaveLength(1);
  });
});

describe('AWS receipts', () => {
  const reference = 'VE0123456789abcdef0123456789abcdef.0';

  // Source: AWS End User Messaging user guide, "Messaging Events", SMS example log
  // (https://docs.aws.amazon.com/end-user-messaging/latest/userguide/nx-features-messaging-events.html);
  // `context` carries our reference as SendTextMessage's Context set it.
  const smsSample = {
    eventType: 'TEXT_SUCCESSFUL',
    eventVersion: '1.0',
    eventTimestamp: 1686975103470,
    isFinal: true,
    originationPhoneNumber: '+12065550152',
    destinationPhoneNumber: '+14255550156',
    isInternationalSend: false,
    mcc: '310',
    mnc: '800',
    messageId: '862a8790-60c0-4430-9b2b-658bdexample',
    messageRequestTimestamp: 1686975103170,
    messageEncoding: 'GSM',
    messageType: 'TRANSACTIONAL',
    messageStatus: 'SUCCESSFUL',
    messageStatusDescription: 'Message has been accepted by phone carrier',
    context: { otpReference: reference },
    totalMessageParts: 1,
    totalMessagePrice: 0.09582,
    totalCarrierFee: 0.0,
  };

  test.each([
    ['TEXT_DELIVERED', 'delivered'],
    ['RCS_DELIVERED', 'delivered'],
    ['TEXT_BLOCKED', 'failed'],
    ['TEXT_INVALID', 'failed'],
    ['TEXT_UNREACHABLE', 'failed'],
    ['TEXT_CARRIER_UNREACHABLE', 'failed'],
    ['TEXT_SPAM', 'failed'],
    ['TEXT_TTL_EXPIRED', 'failed'],
    ['TEXT_PROTECT_BLOCKED', 'failed'],
    ['TEXT_INVALID_MESSAGE', 'failed'],
    ['TEXT_CARRIER_BLOCKED', 'failed'],
    ['TEXT_UNKNOWN', 'failed'],
    ['RCS_FAILED', 'failed'],
    ['RCS_TTL_EXPIRED', 'failed'],
  ])('%s → %s', (eventType, status) => {
    expect(parseSmsEvent({ ...smsSample, eventType })).toEqual({
      reference,
      messageId: '862a8790-60c0-4430-9b2b-658bdexample',
      status,
    });
  });

  test('pending events, RCS fallen back to SMS, and events without our reference are no receipt', () => {
    for (const eventType of [
      'TEXT_QUEUED',
      'TEXT_PENDING',
      'RCS_QUEUED',
      'RCS_SENT',
      'RCS_FALLEN_BACK_TO_SMS',
    ])
      expect(parseSmsEvent({ ...smsSample, eventType })).toBeUndefined();
    expect(parseSmsEvent({ ...smsSample, context: { account: 'bar' } })).toBeUndefined();
    expect(parseSmsEvent({ nonsense: true })).toBeUndefined();
  });

  // AWS marks intermediate events `isFinal: false`; receipts only move forward, so settling on one would hide
  // the failure that follows (the user never gets the code and no fallback runs).
  test('only a final event settles: a non-final TEXT_SUCCESSFUL or failure is no receipt', () => {
    for (const eventType of ['TEXT_SUCCESSFUL', 'TEXT_DELIVERED', 'TEXT_CARRIER_UNREACHABLE', 'TEXT_BLOCKED'])
      expect(parseSmsEvent({ ...smsSample, eventType, isFinal: false })).toBeUndefined();
    const { isFinal: _final, ...withoutIsFinal } = smsSample;
    expect(parseSmsEvent(withoutIsFinal)).toBeUndefined();
  });

  test("RCS's delivery and read, from the phone itself, settle even when not marked final", () => {
    for (const eventType of ['RCS_DELIVERED', 'RCS_READ'])
      expect(parseSmsEvent({ ...smsSample, eventType, isFinal: false })).toMatchObject({
        status: 'delivered',
      });
    for (const eventType of ['RCS_SENT', 'RCS_FAILED', 'RCS_FALLEN_BACK_TO_SMS'])
      expect(parseSmsEvent({ ...smsSample, eventType, isFinal: false })).toBeUndefined();
  });

  test('a final TEXT_SUCCESSFUL (countries whose carriers report no delivery) settles as delivered', () => {
    expect(parseSmsEvent(smsSample)).toEqual({
      reference,
      messageId: smsSample.messageId,
      status: 'delivered',
    });
  });

  test('an SNS Message is the event JSON', () => {
    expect(parseAwsSnsMessage(JSON.stringify({ ...smsSample, eventType: 'TEXT_DELIVERED' }))).toEqual([
      { provider: 'aws-sms', receipt: { reference, messageId: smsSample.messageId, status: 'delivered' } },
    ]);
    expect(parseAwsSnsMessage('not json')).toEqual([]);
  });

  // Source: AWS End User Messaging Social user guide, "Message and event format"
  // (https://docs.aws.amazon.com/social-messaging/latest/userguide/managing-event-destination-dlrs.html) for the
  // header; Meta's WhatsApp Cloud API webhook status payload for the entry, with `biz_opaque_callback_data`
  // (test/support/provider-events.ts).
  test('a WhatsApp SNS event: delivered, read, failed; sent is none', () => {
    const messageId = '6d69f07a-c317-4278-9d5c-6a84078419ec';
    const snsMessage = (status: 'sent' | 'delivered' | 'read' | 'failed') =>
      JSON.stringify(whatsAppSnsEvent({ status, reference, messageId }));
    // Named by reference: the header's messageId is not compared (handlers.ts takes the recorded one).
    const receipt = (status: 'delivered' | 'failed') => [
      { provider: 'aws-whatsapp', receipt: { reference, messageId: undefined, status } },
    ];
    expect(parseAwsSnsMessage(snsMessage('delivered'))).toEqual(receipt('delivered'));
    expect(parseAwsSnsMessage(snsMessage('read'))).toEqual(receipt('delivered'));
    expect(parseAwsSnsMessage(snsMessage('failed'))).toEqual(receipt('failed'));
    expect(parseAwsSnsMessage(snsMessage('sent'))).toEqual([]);
  });

  test("a WhatsApp status is named by its reference, not by WhatsApp's wamid nor AWS's header id", () => {
    const wamid = 'wamid.HBgLMTQxNTU1NTAxMDAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA';
    const withoutId = parseAwsSnsMessage(
      JSON.stringify(whatsAppSnsEvent({ status: 'delivered', reference, messageId: undefined, wamid })),
    );
    expect(withoutId).toEqual([
      { provider: 'aws-whatsapp', receipt: { reference, messageId: undefined, status: 'delivered' } },
    ]);
    // No reference of ours (another app's message on the same WhatsApp Business Account): no receipt.
    expect(
      parseAwsSnsMessage(
        JSON.stringify(whatsAppSnsEvent({ status: 'delivered', reference: undefined, messageId: 'x' })),
      ),
    ).toEqual([]);
  });
});
