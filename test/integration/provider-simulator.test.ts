/**
 * The provider simulator answers as AWS and Vonage do, judged by their own contracts and never by our adapters:
 * requests go through AWS's own SDK clients (or plain HTTP for Vonage), and the expectations come from the
 * service models (test/fixtures/aws-models/README.md), IAM's rules with the Service Authorization Reference's
 * ARN formats, and the providers' documented receipt sequences. Changing one grant or one model pattern shows
 * the failure AWS would answer.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  PinpointSMSVoiceV2Client,
  SendTextMessageCommand,
  type SendTextMessageCommandInput,
} from '@aws-sdk/client-pinpoint-sms-voice-v2';
import {
  GetLinkedWhatsAppBusinessAccountPhoneNumberCommand,
  SendWhatsAppMessageCommand,
  SocialMessagingClient,
} from '@aws-sdk/client-socialmessaging';
import type { SNSEvent } from 'aws-lambda';
import { applicationJwt } from '../../functions/adapters/providers/vonage-jwt';
import { SimulatedCarrier } from '../../local/carrier';
import type { IamStatement } from '../../local/iam';
import { deliverGrants } from '../../local/provider-grants';
import { ProviderSimulator, type ReceiptNoise } from '../../local/provider-simulator';
import { loadModel, type SmithyModel } from '../../local/smithy';

const ACCOUNT = '000000000000';
const POOL = `arn:aws:sms-voice:us-east-1:${ACCOUNT}:pool/pool-0123456789abcdef0123456789abcdef`;
const PHONE_NUMBER_ID = 'phone-number-id-0123456789abcdef0123456789abcdef';
const PHONE_NUMBER_ARN = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/0123456789abcdef0123456789abcdef`;

interface Running {
  simulator: ProviderSimulator;
  carrier: SimulatedCarrier;
  sns: SNSEvent[];
  webhooks: Record<string, unknown>[];
  close(): Promise<void>;
}

const started: Running[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((running) => running.close()));
});

/** A simulator with these grants (and models), its SNS notifications and Vonage webhooks collected. */
async function start(
  options: {
    grants?: IamStatement[];
    models?: { sms?: SmithyModel; social?: SmithyModel };
    noise?: Partial<ReceiptNoise>;
  } = {},
): Promise<Running> {
  const webhooks: Record<string, unknown>[] = [];
  const receiver: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      webhooks.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const carrier = new SimulatedCarrier({
    receiptUrl: () => `${receiverUrl}/carrier`,
    receiptSecret: Buffer.alloc(32),
    token: 'local',
  });
  const sns: SNSEvent[] = [];
  const simulator = await ProviderSimulator.start({
    carrier: () => carrier,
    deliverSns: async (event) => {
      sns.push(event);
    },
    stackUrl: () => receiverUrl,
    grants: () => options.grants ?? [],
    ...(options.models && { models: options.models }),
    receiptNoise: { duplicate: 0, reorder: 0, ...options.noise },
  });
  const running: Running = {
    simulator,
    carrier,
    sns,
    webhooks,
    close: async () => {
      await simulator.close();
      await carrier.close();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    },
  };
  started.push(running);
  return running;
}

const credentials = { accessKeyId: 'AKIALOCALSIMULATOR00', secretAccessKey: 'local' };
const smsClient = (url: string) =>
  new PinpointSMSVoiceV2Client({ endpoint: url, region: 'us-east-1', credentials, maxAttempts: 1 });
const socialClient = (url: string) =>
  new SocialMessagingClient({ endpoint: url, region: 'us-east-1', credentials, maxAttempts: 1 });

const allow = (action: string, ...resources: string[]): IamStatement => ({
  effect: 'Allow',
  actions: [action],
  resources,
});

const textMessage = (extra: Partial<SendTextMessageCommandInput> = {}): SendTextMessageCommandInput => ({
  DestinationPhoneNumber: '+447400123456',
  OriginationIdentity: POOL,
  MessageBody: 'Your code is 123456.',
  MessageType: 'TRANSACTIONAL',
  TimeToLive: 300,
  ...extra,
});

const whatsAppMessage = (to = '447400123456') =>
  new TextEncoder().encode(
    JSON.stringify({
      messaging_product: 'whatsapp',
      to,
      type: 'template',
      biz_opaque_callback_data: 'ref-1',
      template: {
        name: 'otp_authentication',
        language: { code: 'en_US' },
        components: [{ type: 'body', parameters: [{ type: 'text', text: '123456' }] }],
      },
    }),
  );

/** The error an SDK call threw: its name (the modeled shape), message and HTTP status. */
async function failure(call: Promise<unknown>) {
  const error = (await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )) as
    | { name: string; message: string; $metadata: { httpStatusCode?: number }; [key: string]: unknown }
    | undefined;
  if (!error) throw new Error('The call succeeded');
  return error;
}

const events = (running: Running) =>
  running.sns.map((event) => JSON.parse(event.Records[0]!.Sns.Message) as Record<string, unknown>);

const eventually = async <T>(read: () => T | undefined, timeoutMs = 5000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('Timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('the service models', () => {
  test('a request within the model is taken; DryRun is checked and carried nowhere', async () => {
    const running = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    const client = smsClient(running.simulator.url);
    expect((await client.send(new SendTextMessageCommand(textMessage()))).MessageId).toBeDefined();
    await client.send(
      new SendTextMessageCommand(textMessage({ DestinationPhoneNumber: '+447400999999', DryRun: true })),
    );
    expect(running.carrier.messagesTo('+447400999999')).toEqual([]);
  });

  test.each([
    [
      'MaxPrice under its 2 characters',
      { MaxPrice: '1' },
      'MaxPrice',
      'have length greater than or equal to 2',
    ],
    [
      'MaxPrice outside its pattern',
      { MaxPrice: '0.123456' },
      'MaxPrice',
      'satisfy regular expression pattern',
    ],
    ['TimeToLive under 5 s', { TimeToLive: 4 }, 'TimeToLive', 'have value greater than or equal to 5'],
    [
      'a number outside E.164',
      { DestinationPhoneNumber: '00447400123456' },
      'DestinationPhoneNumber',
      'pattern',
    ],
    ['a message type not in the enum', { MessageType: 'OTP' as never }, 'MessageType', 'enum value set'],
    [
      'an India parameter not in the enum',
      { DestinationCountryParameters: { IN_TEMPLATE: '1' } as never },
      'DestinationCountryParameters/IN_TEMPLATE',
      'enum value set',
    ],
  ])('SendTextMessage: %s is a ValidationException', async (_name, extra, field, constraint) => {
    const running = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    const error = await failure(
      smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage(extra))),
    );
    expect(error.name).toBe('ValidationException');
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.Reason).toBe('FIELD_VALIDATION_FAILED');
    expect(error.Fields).toEqual([{ Name: field, Message: expect.stringContaining(constraint) as string }]);
    expect(error.message).toMatch(/^1 validation error detected: /);
    expect(running.carrier.messagesTo(undefined)).toEqual([]);
  });

  test('SendWhatsAppMessage: the phone number ARN with its phone-number-id- prefix kept is refused', async () => {
    const prefixKept = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/${PHONE_NUMBER_ID}`;
    const running = await start({
      grants: [allow('social-messaging:SendWhatsAppMessage', prefixKept, PHONE_NUMBER_ARN)],
    });
    const client = socialClient(running.simulator.url);
    const error = await failure(
      client.send(
        new SendWhatsAppMessageCommand({
          originationPhoneNumberId: prefixKept,
          message: whatsAppMessage(),
          metaApiVersion: 'v23.0',
        }),
      ),
    );
    expect(error.name).toBe('ValidationException');
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.message).toContain("at '/originationPhoneNumberId' failed to satisfy constraint");
    // The id and the real ARN are both within the pattern.
    for (const originationPhoneNumberId of [PHONE_NUMBER_ID, PHONE_NUMBER_ARN])
      await client.send(
        new SendWhatsAppMessageCommand({
          originationPhoneNumberId,
          message: whatsAppMessage(),
          metaApiVersion: 'v23.0',
        }),
      );
  });

  test('changing one pattern of the model changes the answer', async () => {
    const social = structuredClone(loadModel('socialmessaging'));
    social.shapes['com.amazonaws.socialmessaging#WhatsAppPhoneNumberId']!.traits!['smithy.api#pattern'] =
      '^arn:.*$';
    const running = await start({
      grants: [allow('social-messaging:SendWhatsAppMessage', PHONE_NUMBER_ARN)],
      models: { social },
    });
    const error = await failure(
      socialClient(running.simulator.url).send(
        new SendWhatsAppMessageCommand({
          originationPhoneNumberId: PHONE_NUMBER_ID,
          message: whatsAppMessage(),
          metaApiVersion: 'v23.0',
        }),
      ),
    );
    expect(error.name).toBe('ValidationException');
    expect(error.message).toContain('Member must satisfy regular expression pattern: ^arn:.*$');
  });

  test('GetLinkedWhatsAppBusinessAccountPhoneNumber: checked and authorized like a send', async () => {
    const running = await start({
      grants: [allow('social-messaging:GetLinkedWhatsAppBusinessAccountPhoneNumber', PHONE_NUMBER_ARN)],
    });
    const client = socialClient(running.simulator.url);
    const found = await client.send(
      new GetLinkedWhatsAppBusinessAccountPhoneNumberCommand({ id: PHONE_NUMBER_ID }),
    );
    expect(found.phoneNumber?.arn).toBe(PHONE_NUMBER_ARN);
    const error = await failure(
      client.send(new GetLinkedWhatsAppBusinessAccountPhoneNumberCommand({ id: 'waba-1' })),
    );
    expect(error.name).toBe('ValidationException');
  });
});

describe('IAM', () => {
  test('the deliver role as synthesized may send SMS from its pool; without that one grant, AccessDenied', async () => {
    const synthesized = deliverGrants(ProviderSimulator.cdkContext(), ProviderSimulator.scope);
    const sends = await start({ grants: synthesized });
    await smsClient(sends.simulator.url).send(new SendTextMessageCommand(textMessage()));

    const withoutPool = synthesized.map((statement) => ({
      ...statement,
      resources: statement.resources.filter((resource) => resource !== POOL),
    }));
    const denied = await start({ grants: withoutPool });
    const error = await failure(
      smsClient(denied.simulator.url).send(new SendTextMessageCommand(textMessage())),
    );
    expect(error.name).toBe('AccessDeniedException');
    expect(error.message).toBe(
      `User: arn:aws:sts::${ACCOUNT}:assumed-role/OtpLocal-DeliverRole/otp-deliver is not authorized to perform: ` +
        `sms-voice:SendTextMessage on resource: ${POOL} because no identity-based policy allows the ` +
        'sms-voice:SendTextMessage action',
    );
    expect(denied.carrier.messagesTo(undefined)).toEqual([]);
    // The first run after a change to lib/ synthesizes the stack.
  }, 180_000);

  test('every resource a request names needs the grant: the configuration set too', async () => {
    const set = `arn:aws:sms-voice:us-east-1:${ACCOUNT}:configuration-set/otp-local-receipts`;
    const poolOnly = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    const error = await failure(
      smsClient(poolOnly.simulator.url).send(
        new SendTextMessageCommand(textMessage({ ConfigurationSetName: 'otp-local-receipts' })),
      ),
    );
    expect(error.name).toBe('AccessDeniedException');
    expect(error.message).toContain(`on resource: ${set} `);
    const both = await start({ grants: [allow('sms-voice:SendTextMessage', POOL, set)] });
    await smsClient(both.simulator.url).send(
      new SendTextMessageCommand(textMessage({ ConfigurationSetName: 'otp-local-receipts' })),
    );
  });

  test("a WhatsApp grant on the ARN with the id's prefix kept is no grant on the phone number", async () => {
    const prefixKept = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/${PHONE_NUMBER_ID}`;
    const send = (running: Running) =>
      socialClient(running.simulator.url).send(
        new SendWhatsAppMessageCommand({
          originationPhoneNumberId: PHONE_NUMBER_ID,
          message: whatsAppMessage(),
          metaApiVersion: 'v23.0',
        }),
      );
    const wrong = await start({ grants: [allow('social-messaging:SendWhatsAppMessage', prefixKept)] });
    const error = await failure(send(wrong));
    expect(error.name).toBe('AccessDeniedException');
    expect(error.$metadata.httpStatusCode).toBe(403);
    expect(error.message).toContain(`on resource: ${PHONE_NUMBER_ARN} `);
    const right = await start({ grants: [allow('social-messaging:SendWhatsAppMessage', PHONE_NUMBER_ARN)] });
    expect((await send(right)).messageId).toBeDefined();
  });

  test('a Deny wins over an Allow; wildcards match as in IAM', async () => {
    const running = await start({
      grants: [
        allow('sms-voice:Send*', 'arn:aws:sms-voice:us-east-1:*:pool/*'),
        { effect: 'Deny', actions: ['sms-voice:*'], resources: [POOL] },
      ],
    });
    expect(
      (await failure(smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage())))).name,
    ).toBe('AccessDeniedException');
  });
});

describe('receipts as the providers send them', () => {
  test('AWS SMS: TEXT_SUCCESSFUL with isFinal false, then the final TEXT_DELIVERED', async () => {
    const running = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    running.carrier.setRule({ prefix: '+4474', channels: { sms: { deliver: 100 } } });
    await smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage()));
    await eventually(() => (running.sns.length === 2 ? true : undefined));
    expect(events(running).map((event) => [event.eventType, event.isFinal])).toEqual([
      ['TEXT_SUCCESSFUL', false],
      ['TEXT_DELIVERED', true],
    ]);
  });

  test('AWS SMS: an unreachable handset, after the carrier took the message', async () => {
    const running = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    running.carrier.setRule({ prefix: '+4474', channels: { sms: { undeliverable: 100 } } });
    await smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage()));
    await eventually(() => (running.sns.length === 2 ? true : undefined));
    expect(events(running).map((event) => [event.eventType, event.isFinal])).toEqual([
      ['TEXT_SUCCESSFUL', false],
      ['TEXT_UNREACHABLE', true],
    ]);
  });

  test('with duplicates and reordering on, every event comes twice and the non-final one last', async () => {
    const running = await start({
      grants: [allow('sms-voice:SendTextMessage', POOL)],
      noise: { duplicate: 1, reorder: 1 },
    });
    running.carrier.setRule({ prefix: '+4474', channels: { sms: { deliver: 100 } } });
    await smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage()));
    await eventually(() => (running.sns.length === 4 ? true : undefined));
    const types = events(running).map((event) => event.eventType);
    expect(types[0]).toBe('TEXT_DELIVERED');
    expect(types.filter((type) => type === 'TEXT_DELIVERED')).toHaveLength(2);
    expect(types.filter((type) => type === 'TEXT_SUCCESSFUL')).toHaveLength(2);
  });

  test('WhatsApp: sent, delivered, read', async () => {
    const running = await start({
      grants: [allow('social-messaging:SendWhatsAppMessage', PHONE_NUMBER_ARN)],
    });
    running.carrier.setRule({ prefix: '+4474', channels: { whatsapp: { deliver: 100 } } });
    await socialClient(running.simulator.url).send(
      new SendWhatsAppMessageCommand({
        originationPhoneNumberId: PHONE_NUMBER_ID,
        message: whatsAppMessage(),
        metaApiVersion: 'v23.0',
      }),
    );
    await eventually(() => (running.sns.length === 3 ? true : undefined));
    const statuses = events(running).map((event) => {
      const entry = JSON.parse(event.whatsAppWebhookEntry as string) as {
        changes: { value: { statuses: { status: string }[] } }[];
      };
      return entry.changes[0]!.value.statuses[0]!.status;
    });
    expect(statuses).toEqual(['sent', 'delivered', 'read']);
  });

  test('Vonage: submitted then delivered; submitted then undeliverable', async () => {
    const running = await start();
    running.carrier.setRule({ prefix: '+4474001', channels: { sms: { deliver: 100 } } });
    running.carrier.setRule({ prefix: '+4474002', channels: { sms: { undeliverable: 100 } } });
    const { applicationId, privateKey } = running.simulator.vonage;
    for (const to of ['447400111111', '447400222222']) {
      const response = await fetch(`${running.simulator.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${applicationJwt(applicationId, privateKey, new Date())}`,
        },
        body: JSON.stringify({
          channel: 'sms',
          message_type: 'text',
          to,
          from: 'OTPLocal',
          text: 'Code 1',
          client_ref: to,
        }),
      });
      expect(response.status).toBe(202);
    }
    await eventually(() => (running.webhooks.length === 4 ? true : undefined));
    const byNumber = (to: string) =>
      running.webhooks.filter((hook) => hook.to === to).map((hook) => hook.status);
    expect(byNumber('447400111111')).toEqual(['submitted', 'delivered']);
    expect(byNumber('447400222222')).toEqual(['submitted', 'undeliverable']);
  });

  test('Vonage: a request outside its SDK types is a 422 naming the parameter', async () => {
    const running = await start();
    const { applicationId, privateKey } = running.simulator.vonage;
    const response = await fetch(`${running.simulator.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${applicationJwt(applicationId, privateKey, new Date())}`,
      },
      body: JSON.stringify({
        channel: 'sms',
        message_type: 'text',
        to: '447400111111',
        from: 'OTPLocal',
        text: 'Code 1',
        client_ref: 'x'.repeat(101),
      }),
    });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { invalid_parameters: { name: string }[] };
    expect(body.invalid_parameters.map((parameter) => parameter.name)).toEqual(['client_ref']);
  });
});
