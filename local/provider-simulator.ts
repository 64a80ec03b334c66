/**
 * The provider simulator of the local stack (`npm start -- --providers`): one HTTP server on 127.0.0.1 that speaks
 * the wire format of each real provider, so the real adapters (functions/adapters/providers/) run end to end:
 *
 * - AWS End User Messaging SMS (`pinpoint-sms-voice-v2`, awsJson1_0): `POST /` with
 *   `X-Amz-Target: PinpointSMSVoiceV2.SendTextMessage`; answers `{ MessageId }`; an opted-out number is the
 *   `ConflictException` with `Reason: DESTINATION_PHONE_NUMBER_OPTED_OUT` (what aws-sms.ts maps to a rejection).
 *   Its receipts are the configuration set's events (TEXT_DELIVERED, RCS_DELIVERED, TEXT_TTL_EXPIRED...) as SNS
 *   notifications, handed to the SNS receipt function in-process, as SNS invokes that Lambda.
 * - AWS End User Messaging Social (restJson): `POST /v1/whatsapp/send`; answers `{ messageId }`. Its receipts are
 *   the WhatsApp Business Account's events (Meta's webhook entry with `statuses[]`) as SNS notifications, the
 *   same way. WhatsApp refuses a number only later, so a `reject` rule is a `failed` status.
 * - Vonage Messages API v1: `POST /v1/messages` with the RS256 application JWT, verified with the public key of
 *   the configured private key; answers `202 { message_uuid }`; a refused number is the 422 with
 *   `invalid_parameters: [{ name: "to" }]`. Its receipts are message-status webhooks posted over HTTP to the
 *   stack's `POST /v2/Callbacks/vonage`, signed as Vonage signs them (HS256 with the signature secret,
 *   `payload_hash`, `iat`, `jti`).
 *
 * The simulated carrier's rules (`deliver` after N ms, `silent`, `reject`, `error`, `hang`, per number prefix and
 * channel) decide what happens to each message, and the messages go to the carrier's inbox
 * (`GET /_local/messages`) with the provider's name. SigV4 signatures are not verified (fake local credentials).
 */
import type { SNSEvent } from 'aws-lambda';
import {
  createPublicKey,
  createVerify,
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  type KeyObject,
} from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod';
import type { Channel } from '../functions/core/routing';
import { REFERENCE_CONTEXT_KEY } from '../functions/adapters/providers/aws-events';
import { signWebhook } from '../functions/adapters/providers/vonage-jwt';
import type { CarriedMessage, ChannelBehaviour, SimulatedCarrier } from './carrier';
import { SimulatedTimers } from './timers';

/** The providers of each channel under the simulator; `sna` stays on the simulated carrier (http-carrier). */
export const SIMULATED_PROVIDERS = {
  sms: 'aws-sms',
  rcs: 'aws-sms',
  whatsapp: 'aws-whatsapp',
  viber: 'vonage',
  sna: 'http-carrier',
  // A country served by Vonage on every channel it carries: its sms, whatsapp and rcs run through the Messages API.
  countries: { FR: { sms: 'vonage', whatsapp: 'vonage', rcs: 'vonage' } },
} as const;

/** The simulator's identities (none is secret; the Vonage keys are generated per run). */
const SMS_POOL = 'pool-local0sms0000000000000000000';
const RCS_AGENT = 'arn:aws:sms-voice:us-east-1:000000000000:rcs-agent/local-rcs-agent';
const WHATSAPP_PHONE_NUMBER_ID = 'phone-number-id-local00000000000000000000';
const WHATSAPP_TEMPLATE = 'otp_authentication';
const WABA_ID = '100000000000000';
const VONAGE_FROM = { viber: 'OTPLocal', sms: 'OTPLocal', rcs: 'otplocal', whatsapp: '14155550000' };
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

export interface ProviderSimulatorOptions {
  /** Whose rules apply and whose inbox (`/_local/messages`) shows the messages. */
  carrier: () => SimulatedCarrier;
  /** The SNS receipt function, as a topic subscription invokes it (functions/receipts/sns.ts). */
  deliverSns: (event: SNSEvent) => Promise<unknown>;
  /** The stack's base URL: Vonage's status webhooks go to `${url}/v2/Callbacks/vonage`. */
  stackUrl: () => string;
  /** The time the webhook tokens are signed at: the stack's clock (tests move it). */
  now?: () => Date;
}

export interface VonageSimulatorCredentials {
  applicationId: string;
  privateKey: string;
  signatureSecret: string;
}

/** One request the simulator took, for tests (no body: it holds the code). */
export interface SimulatorRequest {
  provider: 'aws-sms' | 'aws-whatsapp' | 'vonage';
  status: number;
}

export class ProviderSimulator {
  readonly requests: SimulatorRequest[] = [];
  private readonly timers = new SimulatedTimers();
  private readonly vonagePublicKey: KeyObject;
  private closed = false;

  private constructor(
    private readonly options: ProviderSimulatorOptions,
    private readonly server: Server,
    readonly url: string,
    /** The generated Vonage application: the adapter's inline credentials (`OTP_VONAGE_CREDENTIALS`). */
    readonly vonage: VonageSimulatorCredentials,
  ) {
    this.vonagePublicKey = createPublicKey(vonage.privateKey);
  }

  static async start(options: ProviderSimulatorOptions): Promise<ProviderSimulator> {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const credentials: VonageSimulatorCredentials = {
      applicationId: randomUUID(),
      privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      signatureSecret: randomBytes(24).toString('base64url'),
    };
    // The server exists before the simulator that serves it.
    const bound: { simulator?: ProviderSimulator } = {};
    const server = createServer((request, response) => {
      void bound.simulator?.serve(request, response);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const { port } = server.address() as AddressInfo;
    bound.simulator = new ProviderSimulator(options, server, `http://127.0.0.1:${port}`, credentials);
    return bound.simulator;
  }

  /**
   * The settings that run each real adapter against this simulator (`OTP_PROVIDERS` and each provider's
   * endpoint and identities). No AWS_REGION: DynamoDB Local keeps tables per region, so the stack's table client
   * must keep its own; the AWS senders get a region of their own (local/stack.ts).
   */
  env(): Record<string, string> {
    return {
      OTP_PROVIDERS: JSON.stringify(SIMULATED_PROVIDERS),
      OTP_AWS_SMS_ENDPOINT: this.url,
      OTP_AWS_SMS_ORIGINATION_IDENTITY: SMS_POOL,
      OTP_AWS_SMS_RCS_ORIGINATION_IDENTITY: RCS_AGENT,
      OTP_AWS_SMS_CONFIGURATION_SET: 'otp-local-receipts',
      OTP_AWS_WHATSAPP_ENDPOINT: this.url,
      OTP_AWS_WHATSAPP_PHONE_NUMBER_ID: WHATSAPP_PHONE_NUMBER_ID,
      OTP_AWS_WHATSAPP_TEMPLATE_NAME: WHATSAPP_TEMPLATE,
      OTP_VONAGE_BASE_URL: this.url,
      OTP_VONAGE_CREDENTIALS: JSON.stringify(this.vonage),
      OTP_VONAGE_FROM: JSON.stringify(VONAGE_FROM),
      OTP_VONAGE_WHATSAPP_TEMPLATE_NAME: WHATSAPP_TEMPLATE,
    };
  }

  /** Waits for receipts already being delivered, cancels the rest, and stops the server. */
  async close(): Promise<void> {
    this.closed = true;
    await this.timers.close();
    await new Promise<void>((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = (request.url ?? '/').split('?')[0];
    let answer: Answer;
    let provider: SimulatorRequest['provider'] | undefined;
    try {
      if (request.method === 'POST' && path === '/' && request.headers['x-amz-target'] !== undefined) {
        provider = 'aws-sms';
        answer = await this.sendTextMessage(request.headers, body);
      } else if (request.method === 'POST' && path === '/v1/whatsapp/send') {
        provider = 'aws-whatsapp';
        answer = await this.sendWhatsAppMessage(request.headers, body);
      } else if (request.method === 'POST' && path === '/v1/messages') {
        provider = 'vonage';
        answer = await this.vonageMessage(request.headers, body);
      } else {
        answer = { status: 404, body: { message: 'Not found' } };
      }
    } catch (error) {
      answer = { status: 500, body: { message: `Simulator error: ${String(error)}` } };
    }
    if (provider) this.requests.push({ provider, status: answer.status });
    response.writeHead(answer.status, {
      'content-type': answer.contentType ?? 'application/json',
      ...answer.headers,
    });
    response.end(JSON.stringify(answer.body));
  }

  // --- AWS End User Messaging SMS -------------------------------------------------------------------------

  private async sendTextMessage(headers: IncomingMessage['headers'], body: string): Promise<Answer> {
    const awsError = (status: number, type: string, message: string, extra: object = {}): Answer => ({
      status,
      contentType: 'application/x-amz-json-1.0',
      headers: { 'x-amzn-requestid': randomUUID() },
      body: { __type: type, Message: message, message, ...extra },
    });
    if (!String(headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 '))
      return awsError(403, 'AccessDeniedException', 'Missing Authentication Token');
    if (headers['x-amz-target'] !== 'PinpointSMSVoiceV2.SendTextMessage')
      return awsError(400, 'UnknownOperationException', 'The simulator only knows SendTextMessage');
    const parsed = sendTextMessageSchema.safeParse(parseJson(body));
    if (!parsed.success)
      return awsError(400, 'ValidationException', 'Invalid request', { Reason: 'FIELD_VALIDATION_FAILED' });
    const input = parsed.data;
    let channel: Channel;
    if (input.OriginationIdentity === RCS_AGENT) channel = 'rcs';
    else if (input.OriginationIdentity === SMS_POOL) channel = 'sms';
    else
      return awsError(404, 'ResourceNotFoundException', 'Unknown origination identity', {
        ResourceType: 'pool',
        ResourceId: input.OriginationIdentity,
      });
    const behaviour = this.options.carrier().behaviourFor(input.DestinationPhoneNumber, channel);
    const reference = input.Context?.[REFERENCE_CONTEXT_KEY] ?? '';
    if (await this.failed(behaviour, input.DestinationPhoneNumber, channel, reference))
      return awsError(500, 'InternalServerException', 'Internal server error', { RequestId: randomUUID() });
    if (behaviour === 'reject') {
      this.record(
        { to: input.DestinationPhoneNumber, channel, body: input.MessageBody, reference },
        'aws-sms',
        {
          outcome: 'rejected',
        },
      );
      return awsError(400, 'ConflictException', 'The destination phone number has opted out', {
        Reason: 'DESTINATION_PHONE_NUMBER_OPTED_OUT',
        ResourceType: 'opt-out-list',
        ResourceId: 'Default',
      });
    }
    const messageId = randomUUID();
    const record = this.record(
      { to: input.DestinationPhoneNumber, channel, body: input.MessageBody, reference },
      'aws-sms',
      { messageId },
    );
    if (typeof behaviour === 'object' && 'deliver' in behaviour) {
      const ttlMs = (input.TimeToLive ?? 259_200) * 1000;
      const expired = behaviour.deliver > ttlMs;
      const prefix = channel === 'rcs' ? 'RCS' : 'TEXT';
      this.later(expired ? ttlMs : behaviour.deliver, async () => {
        const event = {
          eventType: `${prefix}_${expired ? 'TTL_EXPIRED' : 'DELIVERED'}`,
          eventVersion: '1.0',
          eventTimestamp: Date.now(),
          isFinal: true,
          originationPhoneNumber: input.OriginationIdentity,
          destinationPhoneNumber: input.DestinationPhoneNumber,
          messageId,
          messageRequestTimestamp: Date.parse(record.time),
          messageEncoding: 'GSM',
          messageType: input.MessageType ?? 'TRANSACTIONAL',
          messageStatus: expired ? 'TTL_EXPIRED' : 'DELIVERED',
          messageStatusDescription: expired
            ? 'The message could not be delivered before its time to live'
            : 'Message has been accepted by phone',
          totalMessageParts: 1,
          totalMessagePrice: 0.00581,
          totalCarrierFee: 0.00767,
          ...(input.ConfigurationSetName && { configurationSetName: input.ConfigurationSetName }),
          ...(input.Context && { context: input.Context }),
        };
        await this.options.deliverSns(snsNotification('otp-sms-events', event));
        record.outcome = expired ? 'rejected' : 'delivered';
      });
    }
    return {
      status: 200,
      contentType: 'application/x-amz-json-1.0',
      headers: { 'x-amzn-requestid': randomUUID() },
      body: { MessageId: messageId },
    };
  }

  // --- AWS End User Messaging Social (WhatsApp) -----------------------------------------------------------

  private async sendWhatsAppMessage(headers: IncomingMessage['headers'], body: string): Promise<Answer> {
    const awsError = (status: number, type: string, message: string): Answer => ({
      status,
      headers: { 'x-amzn-errortype': type, 'x-amzn-requestid': randomUUID() },
      body: { message },
    });
    if (!String(headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 '))
      return awsError(403, 'AccessDeniedException', 'Missing Authentication Token');
    const parsed = sendWhatsAppSchema.safeParse(parseJson(body));
    if (!parsed.success) return awsError(400, 'ValidationException', 'Invalid request');
    if (parsed.data.originationPhoneNumberId !== WHATSAPP_PHONE_NUMBER_ID)
      return awsError(404, 'ResourceNotFoundException', 'Unknown origination phone number');
    const message = whatsAppTemplateSchema.safeParse(
      parseJson(Buffer.from(parsed.data.message, 'base64').toString('utf8')),
    );
    if (!message.success || message.data.template.name !== WHATSAPP_TEMPLATE)
      return awsError(400, 'ValidationException', 'The message is not an approved template message');
    const { biz_opaque_callback_data: reference = '' } = message.data;
    const to = message.data.to.startsWith('+') ? message.data.to : `+${message.data.to}`;
    const code = message.data.template.components
      .find((component) => component.type === 'body')
      ?.parameters?.find((parameter) => parameter.type === 'text')?.text;
    if (!code) return awsError(400, 'ValidationException', 'The template has no body parameter');
    const behaviour = this.options.carrier().behaviourFor(to, 'whatsapp');
    if (await this.failed(behaviour, to, 'whatsapp', reference))
      return awsError(500, 'InternalServiceException', 'Internal service error');
    const messageId = randomUUID();
    const record = this.record(
      {
        to,
        channel: 'whatsapp',
        // Meta's authentication-template text, with the copy-code button.
        body: `${code} is your verification code. For your security, do not share this code. [Copy code]`,
        reference,
      },
      'aws-whatsapp',
      { messageId },
    );
    const status = (value: 'delivered' | 'failed') => async () => {
      const wamid = `wamid.${randomBytes(24).toString('base64url')}`;
      const entry = {
        id: WABA_ID,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '14155550000', phone_number_id: '110000000000000' },
              statuses: [
                {
                  id: wamid,
                  status: value,
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  recipient_id: to.replace(/^\+/, ''),
                  biz_opaque_callback_data: reference,
                  ...(value === 'failed' && {
                    errors: [{ code: 131026, title: 'Message undeliverable' }],
                  }),
                },
              ],
            },
          },
        ],
      };
      await this.options.deliverSns(
        snsNotification('otp-whatsapp-events', {
          context: {
            MetaWabaIds: [
              { wabaId: WABA_ID, arn: `arn:aws:social-messaging:${REGION}:${ACCOUNT}:waba/local` },
            ],
            MetaPhoneNumberIds: [
              {
                metaPhoneNumberId: '110000000000000',
                arn: `arn:aws:social-messaging:${REGION}:${ACCOUNT}:phone-number-id/local`,
              },
            ],
          },
          whatsAppWebhookEntry: JSON.stringify(entry),
          aws_account_id: ACCOUNT,
          message_timestamp: new Date().toISOString(),
          messageId,
        }),
      );
      record.outcome = value === 'delivered' ? 'delivered' : 'rejected';
    };
    // WhatsApp takes every well-formed template message and tells about the number later, in a `failed` status.
    if (behaviour === 'reject') this.later(0, status('failed'));
    else if (typeof behaviour === 'object' && 'deliver' in behaviour)
      this.later(behaviour.deliver, status('delivered'));
    return { status: 200, headers: { 'x-amzn-requestid': randomUUID() }, body: { messageId } };
  }

  // --- Vonage Messages API --------------------------------------------------------------------------------

  private async vonageMessage(headers: IncomingMessage['headers'], body: string): Promise<Answer> {
    const problem = (status: number, title: string, detail: string, extra: object = {}): Answer => ({
      status,
      contentType: 'application/problem+json',
      body: {
        type: `https://developer.vonage.com/api-errors${status === 401 ? '#unauthorized' : '#invalid-params'}`,
        title,
        detail,
        instance: randomUUID(),
        ...extra,
      },
    });
    if (!this.verifyApplicationJwt(headers.authorization))
      return problem(401, 'Unauthorized', 'You did not provide correct credentials.');
    const parsed = vonageMessageSchema.safeParse(parseJson(body));
    if (!parsed.success)
      return problem(422, 'Invalid params', 'The value of one or more parameters is invalid.');
    const input = parsed.data;
    const channel = VONAGE_CHANNELS[input.channel];
    const to = `+${input.to}`;
    const reference = input.client_ref ?? '';
    let text: string;
    if (input.channel === 'whatsapp') {
      // An authentication template goes as a `custom` message (it has a button); WhatsApp renders Meta's text.
      const { template } = input.custom;
      const code = template.components
        .find((component) => component.type === 'body')
        ?.parameters?.find((parameter) => parameter.type === 'text')?.text;
      if (template.name !== WHATSAPP_TEMPLATE || !code)
        return problem(422, 'Invalid params', 'The value of one or more parameters is invalid.', {
          invalid_parameters: [{ name: 'custom.template', reason: 'not an approved template with a code' }],
        });
      text = `${code} is your verification code. For your security, do not share this code. [Copy code]`;
    } else text = input.text;
    const behaviour = this.options.carrier().behaviourFor(to, channel);
    if (await this.failed(behaviour, to, channel, reference))
      return problem(500, 'Internal Error', 'An internal error occurred.');
    if (behaviour === 'reject') {
      this.record({ to, channel, body: text, reference }, 'vonage', { outcome: 'rejected' });
      return problem(422, 'Invalid params', 'The value of one or more parameters is invalid.', {
        invalid_parameters: [{ name: 'to', reason: `${input.channel} cannot reach this number` }],
      });
    }
    const messageUuid = randomUUID();
    const record = this.record({ to, channel, body: text, reference }, 'vonage', { messageId: messageUuid });
    if (typeof behaviour === 'object' && 'deliver' in behaviour) {
      this.later(behaviour.deliver, async () => {
        const status = JSON.stringify({
          message_uuid: messageUuid,
          to: input.to,
          from: input.from,
          timestamp: new Date().toISOString(),
          status: 'delivered',
          channel: input.channel,
          ...(input.client_ref !== undefined && { client_ref: input.client_ref }),
        });
        const now = this.options.now?.() ?? new Date();
        const response = await fetch(`${this.options.stackUrl()}/v2/Callbacks/vonage`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${signWebhook(status, this.vonage.signatureSecret, now)}`,
          },
          body: status,
        });
        if (response.ok) record.outcome = 'delivered';
      });
    }
    return { status: 202, body: { message_uuid: messageUuid } };
  }

  /** The application JWT: RS256 by the application's private key, for this application, not expired. */
  private verifyApplicationJwt(authorization: string | undefined): boolean {
    const token = /^Bearer ([\w-]+)\.([\w-]+)\.([\w-]+)$/.exec(authorization ?? '');
    if (!token) return false;
    const [, header, payload, signature] = token as unknown as [string, string, string, string];
    try {
      const { alg } = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown };
      if (alg !== 'RS256') return false;
      const valid = createVerify('RSA-SHA256')
        .update(`${header}.${payload}`)
        .verify(this.vonagePublicKey, Buffer.from(signature, 'base64url'));
      if (!valid) return false;
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
        application_id?: unknown;
        exp?: unknown;
      };
      return (
        claims.application_id === this.vonage.applicationId &&
        typeof claims.exp === 'number' &&
        claims.exp > Date.now() / 1000
      );
    } catch {
      return false;
    }
  }

  // --- Shared ---------------------------------------------------------------------------------------------

  /** `error` and `hang` rules: the provider fails (after the hang); nothing is carried. */
  private async failed(
    behaviour: ChannelBehaviour,
    to: string,
    channel: Channel,
    reference: string,
  ): Promise<boolean> {
    const hang = typeof behaviour === 'object' && 'hang' in behaviour ? behaviour.hang : undefined;
    if (behaviour !== 'error' && hang === undefined) return false;
    this.options.carrier().failures.push({ to, channel, reference, time: new Date().toISOString() });
    if (hang !== undefined) await this.timers.hang(hang);
    return true;
  }

  private record(
    message: Pick<CarriedMessage, 'to' | 'channel' | 'body' | 'reference'>,
    provider: string,
    extra: Partial<CarriedMessage>,
  ): CarriedMessage {
    const record: CarriedMessage = {
      ...message,
      provider,
      outcome: 'accepted',
      time: new Date().toISOString(),
      ...extra,
    };
    this.options.carrier().record(record);
    return record;
  }

  /** Runs a receipt after `ms`; a failure leaves the message unconfirmed (a real provider would retry). */
  private later(ms: number, run: () => Promise<void>): void {
    if (!this.closed) this.timers.later(ms, run);
  }
}

interface Answer {
  status: number;
  body: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** An SNS notification as Lambda receives it from a topic subscription. */
function snsNotification(topic: string, message: unknown): SNSEvent {
  const topicArn = `arn:aws:sns:${REGION}:${ACCOUNT}:${topic}`;
  return {
    Records: [
      {
        EventSource: 'aws:sns',
        EventVersion: '1.0',
        EventSubscriptionArn: `${topicArn}:${randomUUID()}`,
        Sns: {
          Type: 'Notification',
          MessageId: randomUUID(),
          TopicArn: topicArn,
          Subject: '',
          Message: JSON.stringify(message),
          Timestamp: new Date().toISOString(),
          SignatureVersion: '1',
          Signature: 'LOCAL',
          SigningCertUrl: `https://sns.${REGION}.amazonaws.com/SimpleNotificationService-local.pem`,
          UnsubscribeUrl: `https://sns.${REGION}.amazonaws.com/?Action=Unsubscribe`,
          MessageAttributes: {},
        },
      },
    ],
  };
}

const sendTextMessageSchema = z.object({
  DestinationPhoneNumber: z.string().regex(/^\+\d{4,15}$/),
  OriginationIdentity: z.string().min(1),
  MessageBody: z.string().min(1).max(1600),
  MessageType: z.enum(['TRANSACTIONAL', 'PROMOTIONAL']).optional(),
  TimeToLive: z.number().int().min(5).max(259_200).optional(),
  ConfigurationSetName: z.string().optional(),
  Context: z.record(z.string(), z.string()).optional(),
});

const sendWhatsAppSchema = z.object({
  originationPhoneNumberId: z.string().min(1),
  metaApiVersion: z.string().min(1),
  message: z.string().min(1),
});

const whatsAppTemplateSchema = z.object({
  messaging_product: z.literal('whatsapp'),
  to: z.string().regex(/^\+?\d{4,15}$/),
  type: z.literal('template'),
  biz_opaque_callback_data: z.string().max(512).optional(),
  template: z.object({
    name: z.string(),
    language: z.object({ code: z.string() }),
    components: z.array(
      z.object({
        type: z.string(),
        parameters: z.array(z.object({ type: z.string(), text: z.string().optional() })).optional(),
      }),
    ),
  }),
});

const VONAGE_CHANNELS = { sms: 'sms', viber_service: 'viber', rcs: 'rcs', whatsapp: 'whatsapp' } as const;

/**
 * The Messages API v1 request bodies per channel (developer.vonage.com/en/api/messages): `to` in E.164 without
 * `+`, `from`, `client_ref` (up to 100 characters) and, per channel, a `text` message (sms; rcs with an optional
 * `ttl` in seconds; viber_service with `viber_service.{ttl 30–259200, type, category}`), or for WhatsApp's
 * authentication template a `custom` message carrying WhatsApp's own template object (Vonage: templates with a
 * button are sent as `custom`, not `template`). Anything else is refused with 422, as Vonage does.
 */
const vonageCommon = {
  to: z.string().regex(/^\d{4,15}$/),
  from: z.string().min(1).max(50),
  client_ref: z.string().max(100).optional(),
};
const vonageMessageSchema = z.discriminatedUnion('channel', [
  z.object({
    ...vonageCommon,
    channel: z.literal('sms'),
    message_type: z.literal('text'),
    text: z.string().min(1).max(1000),
    ttl: z.number().int().min(300).max(259_200).optional(),
  }),
  z.object({
    ...vonageCommon,
    channel: z.literal('rcs'),
    message_type: z.literal('text'),
    text: z.string().min(1).max(3072),
    ttl: z.number().int().min(20).max(259_200).optional(),
  }),
  z.object({
    ...vonageCommon,
    channel: z.literal('viber_service'),
    message_type: z.literal('text'),
    text: z.string().min(1).max(1000),
    viber_service: z
      .object({
        ttl: z.number().int().min(30).max(259_200).optional(),
        type: z.string().optional(),
        category: z.enum(['transaction', 'promotion']),
      })
      .optional(),
  }),
  z.object({
    ...vonageCommon,
    channel: z.literal('whatsapp'),
    message_type: z.literal('custom'),
    custom: z.object({
      type: z.literal('template'),
      template: whatsAppTemplateSchema.shape.template,
    }),
  }),
]);
