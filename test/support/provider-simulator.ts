/**
 * A provider simulator for a test, with the carrier, SNS notifications and Vonage webhooks it produced, and the
 * AWS SDK clients and requests the simulator tests send it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  PinpointSMSVoiceV2Client,
  type SendTextMessageCommandInput,
} from '@aws-sdk/client-pinpoint-sms-voice-v2';
import { SocialMessagingClient } from '@aws-sdk/client-socialmessaging';
import type { SNSEvent } from 'aws-lambda';
import { SimulatedCarrier } from '../../local/carrier';
import type { IamStatement } from '../../local/iam';
import { ProviderSimulator, type ReceiptNoise } from '../../local/provider-simulator';
import type { SmithyModel } from '../../local/smithy';

export const ACCOUNT = '000000000000';
export const POOL = `arn:aws:sms-voice:us-east-1:${ACCOUNT}:pool/pool-0123456789abcdef0123456789abcdef`;
export const PHONE_NUMBER_ID = 'phone-number-id-0123456789abcdef0123456789abcdef';
export const PHONE_NUMBER_ARN = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/0123456789abcdef0123456789abcdef`;

export interface Running {
  simulator: ProviderSimulator;
  carrier: SimulatedCarrier;
  sns: SNSEvent[];
  webhooks: Record<string, unknown>[];
  close(): Promise<void>;
}

const started: Running[] = [];
/** Closes every simulator `start` made (each test file calls it after each test). */
export const stopAll = async (): Promise<void> => {
  await Promise.all(started.splice(0).map((running) => running.close()));
};

/** A simulator with these grants (and models), its SNS notifications and Vonage webhooks collected. */
export async function start(
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
export const smsClient = (url: string) =>
  new PinpointSMSVoiceV2Client({ endpoint: url, region: 'us-east-1', credentials, maxAttempts: 1 });
export const socialClient = (url: string) =>
  new SocialMessagingClient({ endpoint: url, region: 'us-east-1', credentials, maxAttempts: 1 });

export const allow = (action: string, ...resources: string[]): IamStatement => ({
  effect: 'Allow',
  actions: [action],
  resources,
});

export const textMessage = (
  extra: Partial<SendTextMessageCommandInput> = {},
): SendTextMessageCommandInput => ({
  DestinationPhoneNumber: '+447400123456',
  OriginationIdentity: POOL,
  MessageBody: 'Your code is 123456.',
  MessageType: 'TRANSACTIONAL',
  TimeToLive: 300,
  ...extra,
});

/**
 * An authentication-template message as Meta documents it: the code in the body parameter and in the copy-code
 * button (`sub_type: "url"`, `index: "0"`); `components` replaces them.
 */
export const whatsAppMessage = (to = '447400123456', components?: object[]) =>
  new TextEncoder().encode(
    JSON.stringify({
      messaging_product: 'whatsapp',
      to,
      type: 'template',
      biz_opaque_callback_data: 'ref-1',
      template: {
        name: 'otp_authentication',
        language: { code: 'en_US' },
        components: components ?? [
          { type: 'body', parameters: [{ type: 'text', text: '123456' }] },
          { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: '123456' }] },
        ],
      },
    }),
  );

/** The error an SDK call threw: its name (the modeled shape), message and HTTP status. */
export async function failure(call: Promise<unknown>) {
  const error = (await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )) as
    | { name: string; message: string; $metadata: { httpStatusCode?: number }; [key: string]: unknown }
    | undefined;
  if (!error) throw new Error('The call succeeded');
  return error;
}

export const events = (running: Running) =>
  running.sns.map((event) => JSON.parse(event.Records[0]!.Sns.Message) as Record<string, unknown>);

export const eventually = async <T>(read: () => T | undefined, timeoutMs = 5000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('Timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};
