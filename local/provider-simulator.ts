/**
 * The provider simulator of the local stack (`npm start -- --providers`): one HTTP server on 127.0.0.1 that speaks
 * the wire format of each real provider and checks requests as the provider does, so the real adapters
 * (functions/adapters/providers/) run end to end and are judged by the providers' contracts, not by ours:
 *
 * - AWS End User Messaging SMS (`pinpoint-sms-voice-v2`, awsJson1_0): `POST /` with
 *   `X-Amz-Target: PinpointSMSVoiceV2.SendTextMessage`; answers `{ MessageId }`; an opted-out number is the
 *   `ConflictException` with `Reason: DESTINATION_PHONE_NUMBER_OPTED_OUT`. Its receipts are the configuration
 *   set's events as SNS notifications, handed to the SNS receipt function in-process, as SNS invokes that Lambda.
 * - AWS End User Messaging Social (restJson1): `POST /v1/whatsapp/send` answers `{ messageId }`;
 *   `GET /v1/whatsapp/waba/phone/details` the phone number. Its receipts are the WhatsApp Business Account's
 *   events (Meta's webhook entry with `statuses[]`) as SNS notifications, the same way.
 * - Both AWS services: each request is checked against AWS's own service model (local/smithy.ts) and then
 *   authorized by the caller's IAM statements (local/iam.ts: the deliver function's, as synthesized), answering
 *   `ValidationException` or `AccessDeniedException` as AWS does. SigV4 signatures are not verified (fake local
 *   credentials).
 * - Vonage Messages API v1: `POST /v1/messages` with the RS256 application JWT, verified with the public key of
 *   the configured private key; the body checked against Vonage's SDK types; answers `202 { message_uuid }`; a
 *   refused number is the 422 with `invalid_parameters: [{ name: "to" }]`. Its receipts are message-status
 *   webhooks posted to the stack's `POST /v2/Callbacks/vonage`, signed as Vonage documents it
 *   (`vonage-signed-webhook.ts`, written apart from the adapter's verifier).
 *
 * The simulated carrier's rules (`deliver` or `undeliverable` after N ms, `silent`, `reject`, `error`, `hang`,
 * per number prefix and channel) decide what happens to each message; receipts come as providers send them
 * (non-final events first, some twice, some out of order: ReceiptNoise). The messages go to the carrier's inbox
 * (`GET /_local/messages`) with the provider's name.
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
import { parsePhone } from '../functions/core/phone';
import { REFERENCE_CONTEXT_KEY } from '../functions/adapters/providers/aws-events';
import type { CarriedMessage, ChannelBehaviour, SimulatedCarrier } from './carrier';
import {
  authorize,
  sendTextMessageResources,
  whatsAppPhoneNumberResource,
  type IamScope,
  type IamStatement,
} from './iam';
import { findModel, SmithyValidator, type SmithyModel, type ValidationIssue } from './smithy';
import { SimulatedTimers } from './timers';
import { vonageSignedWebhookToken } from './vonage-signed-webhook';

/** The providers of each channel under the simulator; `sna` stays on the simulated carrier (http-carrier). */
const SIMULATED_PROVIDERS = {
  sms: 'aws-sms',
  rcs: 'aws-sms',
  whatsapp: 'aws-whatsapp',
  viber: 'vonage',
  sna: 'http-carrier',
  // A country served by Vonage on every channel it carries: its sms, whatsapp and rcs run through the Messages API.
  countries: { FR: { sms: 'vonage', whatsapp: 'vonage', rcs: 'vonage' } },
} as const;

/**
 * The simulator's identities (none is secret; the Vonage keys are generated per run). The AWS ones are given to
 * the adapters as the synthesized stack gives them (ARNs), and the stack is synthesized with them for the
 * grants the simulator enforces (`cdkContext`).
 */
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';
const SCOPE: IamScope = { partition: 'aws', region: REGION, account: ACCOUNT };
const SMS_POOL_ID = 'pool-0123456789abcdef0123456789abcdef';
const SMS_POOL = `arn:aws:sms-voice:${REGION}:${ACCOUNT}:pool/${SMS_POOL_ID}`;
const RCS_AGENT_ID = 'rcs-agent-0123456789abcdef0123456789abcdef';
const RCS_AGENT = `arn:aws:sms-voice:${REGION}:${ACCOUNT}:rcs-agent/${RCS_AGENT_ID}`;
const CONFIGURATION_SET = 'otp-local-receipts';
/** A phone number id as AWS shows it (`phone-number-id-` and 32 hex digits) and its ARN (the bare digits). */
const WHATSAPP_PHONE_NUMBER_ID = 'phone-number-id-0123456789abcdef0123456789abcdef';
const WHATSAPP_PHONE_NUMBER_ARN = `arn:aws:social-messaging:${REGION}:${ACCOUNT}:phone-number-id/0123456789abcdef0123456789abcdef`;
const META_PHONE_NUMBER_ID = '110000000000000';
const WHATSAPP_TEMPLATE = 'otp_authentication';
const WABA_ID = '100000000000000';
const WABA_LOCAL_ID = 'fedcba9876543210fedcba9876543210';
/**
 * The simulated deployment's India DLT registration (entity id, template id, the registered text): its pool sends
 * to India from a registered sender id, so India's SMS needs them (`otp:awsSmsRegisteredTemplates`).
 */
const INDIA_DLT = {
  IN: {
    entityId: '1101000000000000001',
    templateId: '1107000000000000001',
    text: 'Your code is {code}. Do not share it. - OTPLCL',
  },
};
// Viber's sender is the numeric Business Message ID (16273 is Vonage's sandbox one), never a brand name.
const VONAGE_FROM = { viber: '16273', sms: 'OTPLocal', rcs: 'otplocal', whatsapp: '14155550000' };

const isWhatsAppPhoneNumber = (idOrArn: string) =>
  idOrArn === WHATSAPP_PHONE_NUMBER_ID || idOrArn === WHATSAPP_PHONE_NUMBER_ARN;

/**
 * How receipts arrive (docs/local.md, "Receipts"). The carrier rule's N ms is when the final event comes; each
 * earlier event (AWS SMS's `TEXT_SUCCESSFUL` with `isFinal: false`, WhatsApp's `sent`, Vonage's `submitted`)
 * comes at N × U(0.1, 0.5). With probability `duplicate` an event is sent twice, the copy N × U(0, 0.5) later
 * (SNS and webhooks deliver at least once); with probability `reorder` the non-final event comes N × U(0, 0.5)
 * after the final one (neither SNS nor Vonage promises order). Draws come from a seeded generator, so a run
 * repeats.
 */
export interface ReceiptNoise {
  duplicate: number;
  reorder: number;
  seed: number;
}

const DEFAULT_RECEIPT_NOISE: ReceiptNoise = { duplicate: 0.1, reorder: 0.1, seed: 1 };

export interface ProviderSimulatorOptions {
  /** Whose rules apply and whose inbox (`/_local/messages`) shows the messages. */
  carrier: () => SimulatedCarrier;
  /** The SNS receipt function, as a topic subscription invokes it (functions/entries/snsReceipt.ts). */
  deliverSns: (event: SNSEvent) => Promise<unknown>;
  /** The stack's base URL: Vonage's status webhooks go to `${url}/v2/Callbacks/vonage`. */
  stackUrl: () => string;
  /** The time the webhook tokens are signed at: the stack's clock (tests move it). */
  now?: () => Date;
  /**
   * The caller's IAM statements (the deliver function's, synthesized: local/provider-grants.ts), read at each
   * request. Unset: nothing is allowed, as for a role with no policy.
   */
  grants?: () => IamStatement[];
  /** The service models requests are checked against; unset: test/fixtures/aws-models/. */
  models?: { sms?: SmithyModel; social?: SmithyModel };
  receiptNoise?: Partial<ReceiptNoise>;
  /** Told of each request refused as AWS refuses one outside its model or the caller's grants. */
  onRefusal?: (request: SimulatorRequest) => void;
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
  /** The error's type (`ValidationException`, `AccessDeniedException`…), when the answer is one. */
  errorType?: string;
  errorMessage?: string;
}

let vonageKey: string | undefined;

export class ProviderSimulator {
  readonly requests: SimulatorRequest[] = [];
  private readonly timers = new SimulatedTimers();
  private readonly vonagePublicKey: KeyObject;
  /** The simulated Vonage account's API key, which its signed callbacks name (8 hex digits, as Vonage's). */
  readonly vonageApiKey = randomBytes(4).toString('hex');
  /** Absent where AWS's models are not on this machine: requests are then checked by IAM only. */
  private readonly validators: { sms?: SmithyValidator; social?: SmithyValidator };
  private readonly noise: ReceiptNoise;
  private readonly random: () => number;
  private closed = false;

  private constructor(
    private readonly options: ProviderSimulatorOptions,
    private readonly server: Server,
    readonly url: string,
    /** The generated Vonage application: the adapter's inline credentials (`OTP_VONAGE_CREDENTIALS`). */
    readonly vonage: VonageSimulatorCredentials,
  ) {
    this.vonagePublicKey = createPublicKey(vonage.privateKey);
    const sms = options.models?.sms ?? findModel('pinpoint-sms-voice-v2');
    const social = options.models?.social ?? findModel('socialmessaging');
    this.validators = {
      ...(sms && { sms: new SmithyValidator(sms) }),
      ...(social && { social: new SmithyValidator(social) }),
    };
    this.noise = { ...DEFAULT_RECEIPT_NOISE, ...options.receiptNoise };
    this.random = mulberry32(this.noise.seed);
  }

  /**
   * The CDK context that deploys the stack for the simulator's identities, as an operator's providers.json
   * would: the stack synthesized with it gives the grants the simulator enforces.
   */
  static cdkContext(): Record<string, unknown> {
    return {
      'otp:providers': SIMULATED_PROVIDERS,
      'otp:awsSmsOriginationIdentity': SMS_POOL,
      'otp:awsSmsRcsOriginationIdentity': RCS_AGENT,
      'otp:awsSmsConfigurationSet': CONFIGURATION_SET,
      'otp:awsSmsRegisteredTemplates': INDIA_DLT,
      'otp:awsWhatsAppPhoneNumberId': WHATSAPP_PHONE_NUMBER_ID,
      'otp:awsWhatsAppTemplateName': WHATSAPP_TEMPLATE,
      'otp:vonageFrom': VONAGE_FROM,
      'otp:vonageWhatsAppTemplateName': WHATSAPP_TEMPLATE,
    };
  }

  /** The account and region the simulated AWS resources live in. */
  static readonly scope: IamScope = SCOPE;

  static async start(options: ProviderSimulatorOptions): Promise<ProviderSimulator> {
    // One key pair per process: generating one takes a noticeable part of a second, and tests start many.
    vonageKey ??= generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const credentials: VonageSimulatorCredentials = {
      applicationId: randomUUID(),
      privateKey: vonageKey,
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
      OTP_AWS_SMS_CONFIGURATION_SET: CONFIGURATION_SET,
      OTP_AWS_SMS_REGISTERED_TEMPLATES: JSON.stringify(INDIA_DLT),
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
    const url = new URL(request.url ?? '/', 'http://simulator');
    const path = url.pathname;
    let answer: Answer;
    let provider: SimulatorRequest['provider'] | undefined;
    try {
      if (request.method === 'POST' && path === '/' && request.headers['x-amz-target'] !== undefined) {
        provider = 'aws-sms';
        answer = await this.sendTextMessage(request.headers, body);
      } else if (request.method === 'POST' && path === '/v1/whatsapp/send') {
        provider = 'aws-whatsapp';
        answer = await this.sendWhatsAppMessage(request.headers, body);
      } else if (request.method === 'GET' && path === '/v1/whatsapp/waba/phone/details') {
        provider = 'aws-whatsapp';
        answer = this.getLinkedPhoneNumber(request.headers, url.searchParams);
      } else if (request.method === 'POST' && path === '/v1/messages') {
        provider = 'vonage';
        answer = await this.vonageMessage(request.headers, body);
      } else {
        answer = { status: 404, body: { message: 'Not found' } };
      }
    } catch (error) {
      answer = { status: 500, body: { message: `Simulator error: ${String(error)}` } };
    }
    if (provider) {
      const taken: SimulatorRequest = {
        provider,
        status: answer.status,
        ...(answer.errorType && { errorType: answer.errorType }),
        ...(answer.errorMessage && { errorMessage: answer.errorMessage }),
      };
      this.requests.push(taken);
      if (taken.errorType === 'ValidationException' || taken.errorType === 'AccessDeniedException')
        this.options.onRefusal?.(taken);
    }
    response.writeHead(answer.status, {
      'content-type': answer.contentType ?? 'application/json',
      ...answer.headers,
    });
    response.end(JSON.stringify(answer.body));
  }

  // --- AWS (both services) -------------------------------------------------------------------------------

  /**
   * What AWS does before a request reaches the service's own logic: the request against the operation's input
   * shape in the service model, then IAM on the action and the resources it names. Undefined when both pass.
   */
  private awsGate(
    service: 'sms' | 'social',
    operation: string,
    input: unknown,
    resources: (valid: Record<string, unknown>) => string[],
  ): { validation: ValidationIssue[] } | { denied: string; action: string } | undefined {
    const validator = this.validators[service];
    const namespace =
      service === 'sms' ? 'com.amazonaws.pinpointsmsvoicev2' : 'com.amazonaws.socialmessaging';
    const issues = validator?.validate(validator.inputOf(`${namespace}#${operation}`), input) ?? [];
    if (issues.length > 0) return { validation: issues };
    const action = `${service === 'sms' ? 'sms-voice' : 'social-messaging'}:${operation}`;
    const decision = authorize(this.grants(), action, resources(input as Record<string, unknown>));
    if (!decision.allowed) return { denied: decision.resource, action };
    return undefined;
  }

  /** Whether AWS requests are checked against AWS's service models (absent models: IAM only). */
  get checksModels(): boolean {
    return this.validators.sms !== undefined && this.validators.social !== undefined;
  }

  private grants(): IamStatement[] {
    return this.options.grants?.() ?? [];
  }

  /** The Social API's answer to a request its model or IAM refused (restJson1: the type in a header). */
  private static socialRefusal(
    gate: { validation: ValidationIssue[] } | { denied: string; action: string },
  ): Answer {
    if ('validation' in gate)
      return restJsonError(400, 'ValidationException', SmithyValidator.message(gate.validation));
    return restJsonError(
      403,
      'AccessDeniedException',
      ProviderSimulator.deniedMessage(gate.action, gate.denied),
    );
  }

  /** IAM's message for a denied call, naming the caller as the deliver function's role session. */
  private static deniedMessage(action: string, resource: string): string {
    return (
      `User: arn:aws:sts::${ACCOUNT}:assumed-role/OtpLocal-DeliverRole/otp-deliver is not authorized to ` +
      `perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`
    );
  }

  // --- AWS End User Messaging SMS (awsJson1_0) ------------------------------------------------------------

  private async sendTextMessage(headers: IncomingMessage['headers'], body: string): Promise<Answer> {
    // awsJson1_0 errors: HTTP 400 for client errors, the shape's name in `__type` (the SDK reads the part after
    // `#`), the modeled members beside it.
    const awsError = (status: number, type: string, message: string, extra: object = {}): Answer => ({
      status,
      contentType: 'application/x-amz-json-1.0',
      headers: { 'x-amzn-requestid': randomUUID() },
      body: { __type: `com.amazonaws.pinpointsmsvoicev2#${type}`, Message: message, ...extra },
      errorType: type,
      errorMessage: message,
    });
    if (!String(headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 '))
      return awsError(403, 'AccessDeniedException', 'Missing Authentication Token');
    if (headers['x-amz-target'] !== 'PinpointSMSVoiceV2.SendTextMessage')
      return awsError(400, 'UnknownOperationException', 'The simulator only knows SendTextMessage');
    const json = parseJson(body);
    if (json === undefined) return awsError(400, 'SerializationException', 'The request body is not JSON');
    const gate = this.awsGate('sms', 'SendTextMessage', json, (input) =>
      sendTextMessageResources(SCOPE, {
        ...(input as Parameters<typeof sendTextMessageResources>[1]),
        DestinationCountry: parsePhone(String(input.DestinationPhoneNumber))?.country,
      }),
    );
    if (gate && 'validation' in gate)
      return awsError(400, 'ValidationException', SmithyValidator.message(gate.validation), {
        Reason: 'FIELD_VALIDATION_FAILED',
        Fields: gate.validation.map((issue) => ({ Name: issue.path.slice(1), Message: issue.message })),
      });
    if (gate)
      return awsError(
        400,
        'AccessDeniedException',
        ProviderSimulator.deniedMessage(gate.action, gate.denied),
      );
    const input = json as SendTextMessageInput;
    const identity = input.OriginationIdentity ?? '';
    let channel: Channel;
    if (identity === RCS_AGENT || identity === RCS_AGENT_ID) channel = 'rcs';
    else if (identity === SMS_POOL || identity === SMS_POOL_ID) channel = 'sms';
    else
      return awsError(400, 'ResourceNotFoundException', 'Unknown origination identity', {
        ResourceType: 'pool',
        ResourceId: identity,
      });
    const to = input.DestinationPhoneNumber;
    // India's DLT rule for an SMS from a sender id (AWS End User Messaging SMS user guide, "Special requirements
    // for sending SMS messages to recipients in India"): its entity and template ids must come with it. AWS's
    // exact answer to one without them is unverified (docs/providers.md, section 9); a ValidationException with
    // a reason from the model's list is what the simulator answers. Dry runs are refused alike.
    if (channel === 'sms' && parsePhone(to)?.country === 'IN') {
      const parameters = input.DestinationCountryParameters ?? {};
      const missing = ['IN_ENTITY_ID', 'IN_TEMPLATE_ID'].filter((key) => !parameters[key]);
      if (missing.length > 0)
        return awsError(
          400,
          'ValidationException',
          `Sending to India from a sender ID requires DestinationCountryParameters ${missing.join(' and ')}`,
          {
            Reason: 'MISSING_PARAMETER',
            Fields: missing.map((key) => ({
              Name: `DestinationCountryParameters/${key}`,
              Message: 'Required for recipients in India',
            })),
          },
        );
    }
    const messageId = randomUUID();
    // DryRun: checked as a send is, carried nowhere.
    if (input.DryRun === true) return awsOk({ MessageId: messageId });
    const behaviour = this.options.carrier().behaviourFor(to, channel);
    const reference = input.Context?.[REFERENCE_CONTEXT_KEY] ?? '';
    if (await this.failed(behaviour, to, channel, reference))
      return awsError(500, 'InternalServerException', 'Internal server error', { RequestId: randomUUID() });
    if (behaviour === 'reject') {
      this.record({ to, channel, body: input.MessageBody ?? '', reference }, 'aws-sms', {
        outcome: 'rejected',
      });
      return awsError(400, 'ConflictException', 'The destination phone number has opted out', {
        Reason: 'DESTINATION_PHONE_NUMBER_OPTED_OUT',
        ResourceType: 'opt-out-list',
        ResourceId: 'Default',
      });
    }
    const record = this.record({ to, channel, body: input.MessageBody ?? '', reference }, 'aws-sms', {
      messageId,
    });
    const prefix = channel === 'rcs' ? 'RCS' : 'TEXT';
    const event = (eventType: string, isFinal: boolean, messageStatus: string, description: string) => ({
      eventType,
      eventVersion: '1.0',
      eventTimestamp: Date.now(),
      isFinal,
      originationPhoneNumber: identity,
      destinationPhoneNumber: to,
      messageId,
      messageRequestTimestamp: Date.parse(record.time),
      messageEncoding: 'GSM',
      messageType: input.MessageType ?? 'TRANSACTIONAL',
      messageStatus,
      messageStatusDescription: description,
      totalMessageParts: 1,
      totalMessagePrice: 0.00581,
      totalCarrierFee: 0.00767,
      ...(input.ConfigurationSetName && { configurationSetName: input.ConfigurationSetName }),
      ...(input.Context && { context: input.Context }),
    });
    const publish = (payload: object, outcome?: CarriedMessage['outcome']) => async () => {
      await this.options.deliverSns(
        snsNotification('otp-sms-events', { ...payload, eventTimestamp: Date.now() }),
      );
      if (outcome) record.outcome = outcome;
    };
    const ttlMs = (input.TimeToLive ?? 259_200) * 1000;
    const final = finalOf(behaviour);
    if (final) {
      const expired = final.at > ttlMs;
      const last = expired
        ? event(
            `${prefix}_TTL_EXPIRED`,
            true,
            'TTL_EXPIRED',
            'The message could not be delivered before its time to live',
          )
        : final.delivered
          ? event(`${prefix}_DELIVERED`, true, 'DELIVERED', 'Message has been accepted by phone')
          : event(
              channel === 'rcs' ? 'RCS_FAILED' : 'TEXT_UNREACHABLE',
              true,
              'UNREACHABLE',
              'The destination phone number is unreachable',
            );
      // SMS only: the carrier's acceptance, before the handset's receipt (AWS marks it `isFinal: false`).
      const steps =
        channel === 'sms'
          ? [
              {
                payload: event(
                  'TEXT_SUCCESSFUL',
                  false,
                  'SUCCESSFUL',
                  'Message has been accepted by the carrier',
                ),
                final: false,
              },
            ]
          : [];
      this.schedule(
        [...steps, { payload: last, final: true }],
        expired ? ttlMs : final.at,
        (payload, isFinal) =>
          publish(payload, isFinal ? (expired || !final.delivered ? 'undelivered' : 'delivered') : undefined),
      );
    }
    return awsOk({ MessageId: messageId });
  }

  // --- AWS End User Messaging Social (restJson1) ----------------------------------------------------------

  private async sendWhatsAppMessage(headers: IncomingMessage['headers'], body: string): Promise<Answer> {
    if (!String(headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 '))
      return restJsonError(403, 'AccessDeniedException', 'Missing Authentication Token');
    const json = parseJson(body);
    if (json === undefined)
      return restJsonError(400, 'SerializationException', 'The request body is not JSON');
    const gate = this.awsGate('social', 'SendWhatsAppMessage', json, (input) => [
      whatsAppPhoneNumberResource(SCOPE, String(input.originationPhoneNumberId)),
    ]);
    if (gate) return ProviderSimulator.socialRefusal(gate);
    const input = json as { originationPhoneNumberId: string; message: string; metaApiVersion: string };
    if (!isWhatsAppPhoneNumber(input.originationPhoneNumberId))
      return restJsonError(404, 'ResourceNotFoundException', 'Unknown origination phone number');
    // The message is WhatsApp Cloud API's own object (Meta's reference), which no AWS model describes.
    const message = whatsAppTemplateSchema.safeParse(
      parseJson(Buffer.from(input.message, 'base64').toString('utf8')),
    );
    if (!message.success || message.data.template.name !== WHATSAPP_TEMPLATE)
      return restJsonError(
        400,
        'InvalidParametersException',
        'The message is not an approved template message',
      );
    const { biz_opaque_callback_data: reference = '' } = message.data;
    const to = message.data.to.startsWith('+') ? message.data.to : `+${message.data.to}`;
    const code = authenticationCode(message.data.template);
    if (!code)
      return restJsonError(
        400,
        'InvalidParametersException',
        'The authentication template needs the code in its body parameter and in its copy-code button',
      );
    const behaviour = this.options.carrier().behaviourFor(to, 'whatsapp');
    if (await this.failed(behaviour, to, 'whatsapp', reference))
      return restJsonError(500, 'InternalServiceException', 'Internal service error');
    const messageId = randomUUID();
    const wamid = `wamid.${randomBytes(24).toString('base64url')}`;
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
    const status = (value: 'sent' | 'delivered' | 'read' | 'failed') => ({
      id: wamid,
      status: value,
      recipient_id: to.replace(/^\+/, ''),
      biz_opaque_callback_data: reference,
      ...(value === 'failed' && { errors: [{ code: 131026, title: 'Message undeliverable' }] }),
    });
    const publish = (payload: ReturnType<typeof status>, outcome?: CarriedMessage['outcome']) => async () => {
      await this.options.deliverSns(
        snsNotification(
          'otp-whatsapp-events',
          whatsAppEvent({ ...payload, timestamp: String(Math.floor(Date.now() / 1000)) }, messageId),
        ),
      );
      if (outcome) record.outcome = outcome;
    };
    // WhatsApp takes every well-formed template message and tells about the number later, in a `failed` status.
    const final = behaviour === 'reject' ? { at: 0, delivered: false } : finalOf(behaviour);
    if (final) {
      const steps = [{ payload: status('sent'), final: false }];
      if (final.delivered) {
        this.schedule(
          [...steps, { payload: status('delivered'), final: true }],
          final.at,
          (payload, isFinal) => publish(payload, isFinal ? 'delivered' : undefined),
        );
        // The user opens the chat later: `read` after `delivered`, never a receipt of its own here.
        this.later(final.at + this.draw(0.5, 2) * Math.max(final.at, 100), publish(status('read')));
      } else
        this.schedule(
          behaviour === 'reject'
            ? [{ payload: status('failed'), final: true }]
            : [...steps, { payload: status('failed'), final: true }],
          final.at,
          (payload, isFinal) =>
            publish(payload, isFinal ? (behaviour === 'reject' ? 'rejected' : 'undelivered') : undefined),
        );
    }
    return { status: 200, headers: { 'x-amzn-requestid': randomUUID() }, body: { messageId } };
  }

  /** GetLinkedWhatsAppBusinessAccountPhoneNumber: the phone number's details (a check that sends nothing). */
  private getLinkedPhoneNumber(headers: IncomingMessage['headers'], query: URLSearchParams): Answer {
    if (!String(headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 '))
      return restJsonError(403, 'AccessDeniedException', 'Missing Authentication Token');
    const input = { ...(query.has('id') && { id: query.get('id') }) };
    const gate = this.awsGate('social', 'GetLinkedWhatsAppBusinessAccountPhoneNumber', input, () => [
      whatsAppPhoneNumberResource(SCOPE, String(input.id)),
    ]);
    if (gate) return ProviderSimulator.socialRefusal(gate);
    if (!isWhatsAppPhoneNumber(String(input.id)))
      return restJsonError(404, 'ResourceNotFoundException', 'Unknown phone number');
    return {
      status: 200,
      headers: { 'x-amzn-requestid': randomUUID() },
      body: {
        phoneNumber: {
          arn: WHATSAPP_PHONE_NUMBER_ARN,
          phoneNumber: '+14155550000',
          phoneNumberId: WHATSAPP_PHONE_NUMBER_ID,
          metaPhoneNumberId: META_PHONE_NUMBER_ID,
          displayPhoneNumberName: 'OTP Local',
          displayPhoneNumber: '+1 415-555-0000',
          qualityRating: 'GREEN',
        },
        linkedWhatsAppBusinessAccountId: `waba-${WABA_LOCAL_ID}`,
      },
    };
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
      return problem(422, 'Invalid params', 'The value of one or more parameters is invalid.', {
        invalid_parameters: parsed.error.issues.map((issue) => ({
          name: issue.path.join('.'),
          reason: issue.message,
        })),
      });
    const input = parsed.data;
    const channel = VONAGE_CHANNELS[input.channel];
    const to = `+${input.to}`;
    const reference = input.client_ref ?? '';
    let text: string;
    if (input.channel === 'whatsapp') {
      // An authentication template goes as a `custom` message (it has a button); WhatsApp renders Meta's text.
      const { template } = input.custom;
      const code = authenticationCode(template);
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
    const final = finalOf(behaviour);
    if (final) {
      // The message status webhook (Messages API v1): `submitted` when Vonage hands it on, then `delivered`, or
      // `undeliverable` with an error when the network could not reach the handset.
      const status = (value: 'submitted' | 'delivered' | 'undeliverable') => ({
        message_uuid: messageUuid,
        to: input.to,
        from: input.from,
        status: value,
        channel: input.channel,
        ...(input.client_ref !== undefined && { client_ref: input.client_ref }),
        ...(value === 'undeliverable' && {
          error: {
            type: 'https://developer.vonage.com/api-errors/messages#1320',
            title: '1320',
            detail: 'Message failed because the number is unreachable',
            instance: randomUUID(),
          },
        }),
      });
      const post = (payload: ReturnType<typeof status>, isFinal: boolean) => async () => {
        const webhook = JSON.stringify({ ...payload, timestamp: new Date().toISOString() });
        const now = this.options.now?.() ?? new Date();
        const response = await fetch(`${this.options.stackUrl()}/v2/Callbacks/vonage`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${this.signedVonageCallback(webhook, now)}`,
          },
          body: webhook,
        });
        if (response.ok && isFinal) record.outcome = final.delivered ? 'delivered' : 'undelivered';
      };
      this.schedule(
        [
          { payload: status('submitted'), final: false },
          { payload: status(final.delivered ? 'delivered' : 'undeliverable'), final: true },
        ],
        final.at,
        post,
      );
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

  /** A callback's token as Vonage signs it for this account and application; tests forge with `secret`. */
  signedVonageCallback(body: string, at: Date, overrides: { secret?: string; jti?: string } = {}): string {
    return vonageSignedWebhookToken(body, {
      secret: overrides.secret ?? this.vonage.signatureSecret,
      at,
      apiKey: this.vonageApiKey,
      applicationId: this.vonage.applicationId,
      ...(overrides.jti !== undefined && { jti: overrides.jti }),
    });
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

  /** A draw from U(min, max). */
  private draw(min: number, max: number): number {
    return min + (max - min) * this.random();
  }

  /**
   * Sends a message's receipts as the provider would (see ReceiptNoise): the final one at `finalAt`, the earlier
   * ones before it, or after it when reordered, and any of them twice.
   */
  private schedule<T>(
    steps: { payload: T; final: boolean }[],
    finalAt: number,
    send: (payload: T, final: boolean) => () => Promise<void>,
  ): void {
    const span = Math.max(finalAt, 100);
    for (const step of steps) {
      let at = step.final ? finalAt : finalAt * this.draw(0.1, 0.5);
      if (!step.final && this.random() < this.noise.reorder) at = finalAt + span * this.draw(0, 0.5);
      this.later(at, send(step.payload, step.final));
      if (this.random() < this.noise.duplicate)
        this.later(at + span * this.draw(0, 0.5), send(step.payload, step.final));
    }
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
  /** For `requests` (tests): the error's type and message. */
  errorType?: string;
  errorMessage?: string;
}

interface SendTextMessageInput {
  DestinationPhoneNumber: string;
  OriginationIdentity?: string;
  MessageBody?: string;
  MessageType?: string;
  TimeToLive?: number;
  ConfigurationSetName?: string;
  Context?: Record<string, string>;
  DestinationCountryParameters?: Record<string, string>;
  DryRun?: boolean;
}

const awsOk = (body: object): Answer => ({
  status: 200,
  contentType: 'application/x-amz-json-1.0',
  headers: { 'x-amzn-requestid': randomUUID() },
  body,
});

/** restJson1 errors: the type in `x-amzn-ErrorType`, the modeled `message` in the body. */
const restJsonError = (status: number, type: string, message: string): Answer => ({
  status,
  headers: { 'x-amzn-errortype': type, 'x-amzn-requestid': randomUUID() },
  body: { message },
  errorType: type,
  errorMessage: message,
});

/** When a behaviour's final receipt comes, and whether it says delivered; undefined: no receipt at all. */
function finalOf(behaviour: ChannelBehaviour): { at: number; delivered: boolean } | undefined {
  if (typeof behaviour !== 'object') return undefined;
  if ('deliver' in behaviour) return { at: behaviour.deliver, delivered: true };
  if ('undeliverable' in behaviour) return { at: behaviour.undeliverable, delivered: false };
  return undefined;
}

/** A small seeded generator (mulberry32): the receipts' draws repeat from run to run. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * An AWS End User Messaging Social event as the WABA's SNS event destination publishes it: AWS's header around
 * Meta's webhook entry with one status.
 */
function whatsAppEvent(status: object, messageId: string) {
  const entry = {
    id: WABA_ID,
    changes: [
      {
        field: 'messages',
        value: {
          messaging_product: 'whatsapp',
          metadata: { display_phone_number: '14155550000', phone_number_id: META_PHONE_NUMBER_ID },
          statuses: [status],
        },
      },
    ],
  };
  return {
    context: {
      MetaWabaIds: [
        { wabaId: WABA_ID, arn: `arn:aws:social-messaging:${REGION}:${ACCOUNT}:waba/${WABA_LOCAL_ID}` },
      ],
      MetaPhoneNumberIds: [{ metaPhoneNumberId: META_PHONE_NUMBER_ID, arn: WHATSAPP_PHONE_NUMBER_ARN }],
    },
    whatsAppWebhookEntry: JSON.stringify(entry),
    aws_account_id: ACCOUNT,
    message_timestamp: new Date().toISOString(),
    messageId,
  };
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
        sub_type: z.string().optional(),
        index: z.union([z.string(), z.number()]).optional(),
        parameters: z.array(z.object({ type: z.string(), text: z.string().optional() })).optional(),
      }),
    ),
  }),
});

/**
 * The code of a WhatsApp authentication-template message with a copy-code button, as Meta takes it: the same code
 * as the text parameter of the `body` component and of the `button` component (`sub_type: "url"`, `index` 0).
 * Meta's "Sending Authentication Message Templates with One-Time Password Buttons": "Assign the user's one-time
 * password or verification code to the text property (parameters.text) of both objects in the components
 * array." Undefined when either is missing (Meta refuses a template message short of a parameter) or when they
 * differ (the page asks for the one code in both).
 */
function authenticationCode(
  template: z.infer<typeof whatsAppTemplateSchema>['template'],
): string | undefined {
  const textOf = (component: (typeof template.components)[number] | undefined) =>
    component?.parameters?.length === 1 && component.parameters[0]!.type === 'text'
      ? component.parameters[0]!.text
      : undefined;
  const code = textOf(template.components.find((component) => component.type === 'body'));
  const button = template.components.find(
    (component) =>
      component.type === 'button' && component.sub_type === 'url' && Number(component.index) === 0,
  );
  return code && textOf(button) === code ? code : undefined;
}

const VONAGE_CHANNELS = { sms: 'sms', viber_service: 'viber', rcs: 'rcs', whatsapp: 'whatsapp' } as const;

/**
 * The Messages API v1 request bodies per channel. Vonage publishes no machine-readable model; these are the
 * types and checks of its own Node SDK (github.com/Vonage/vonage-node-sdk, packages/messages/lib/types:
 * MessageParams.ts at 691a7962 — `to`, `from`, `client_ref` of up to 100 characters, `webhook_version` v0.1|v1;
 * Channels/SMSParams.ts at 22959c7e — `ttl`, `sms.{encoding_type text|unicode|auto, content_id, entity_id}`;
 * Channels/RCS/RCSTextParams.ts at 7fb016a1 — `text` up to 3072 characters, `ttl`;
 * Channels/Viber/ViberService.ts at 72631927 — `viber_service.{ttl, type, category}`;
 * Channels/WhatsApp/WhatsAppCustomParams.ts at 691a7962 — `custom`) and of the API reference
 * (developer.vonage.com/en/api/messages: `to` in E.164 without `+`, SMS `text` up to 1000 characters and `ttl`
 * 300–259200 s, RCS `ttl` 20–259200 s, Viber `ttl` 30–259200 s and `category` transaction|promotion). A
 * WhatsApp authentication template has a button, so it goes as `custom` carrying WhatsApp's own template object.
 * Anything else is refused with 422 and `invalid_parameters`, as Vonage does. Not checked: Viber's `type`,
 * which the SDK types as any string and the reference documents for templates only.
 */
const vonageCommon = {
  to: z.string().regex(/^\d{4,15}$/),
  from: z.string().min(1).max(50),
  client_ref: z.string().max(100).optional(),
  webhook_url: z.string().url().optional(),
  webhook_version: z.enum(['v0.1', 'v1']).optional(),
};
const vonageMessageSchema = z.discriminatedUnion('channel', [
  z.object({
    ...vonageCommon,
    channel: z.literal('sms'),
    message_type: z.literal('text'),
    text: z.string().min(1).max(1000),
    ttl: z.number().int().min(300).max(259_200).optional(),
    sms: z
      .object({
        encoding_type: z.enum(['text', 'unicode', 'auto']).optional(),
        content_id: z.string().optional(),
        entity_id: z.string().optional(),
      })
      .optional(),
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
