import {
  ProviderError,
  type OutboundMessage,
  type Provider,
  type ProviderAnswer,
  type ProviderErrorCode,
  type Receipt,
  type ReceiptRequest,
} from '../../core/providers';
import type { Channel } from '../../core/routing';
import { isObject, isOptionalText, isText } from '../shape';
import {
  WHATSAPP_MIN_TTL_SECONDS,
  assertWhatsAppSendable,
  authenticationTemplateMessage,
} from './whatsapp-template';
import { applicationJwt, verifySignedWebhook } from './vonage-jwt';

/**
 * Vonage Messages API v1: `POST {baseUrl}/v1/messages` with an application JWT, for `viber` (`viber_service`) and,
 * where a deployment prefers it, `sms`, `whatsapp` (the same authentication template as aws-whatsapp, as a
 * `custom` message) and `rcs`. `client_ref` carries our reference. Receipts come to `POST /v2/Callbacks/vonage`
 * (the message status webhook) as signed webhooks: believed only with a valid HS256 token over the body, fresh,
 * and never seen before (its `jti` is remembered until the window has passed).
 */
const VONAGE_PROVIDER_NAME = 'vonage';
const DEFAULT_VONAGE_BASE_URL = 'https://api.nexmo.com';

/** What the Vonage secret holds (Secrets Manager, `OTP_VONAGE_SECRET_ARN`): never logged, never stored. */
export interface VonageCredentials {
  applicationId: string;
  privateKey: string;
  signatureSecret: string;
}

/** The credentials in a parsed secret; undefined when a field is missing or empty, or the signature secret short. */
export function readVonageCredentials(json: unknown): VonageCredentials | undefined {
  if (!isObject(json)) return undefined;
  const { applicationId, privateKey, signatureSecret } = json;
  if (!isText(applicationId, undefined, 1) || !isText(privateKey, undefined, 1)) return undefined;
  if (!isText(signatureSecret, undefined, 16)) return undefined;
  return { applicationId, privateKey, signatureSecret };
}

/** Remembers a token id once: false when it was seen before (a replay). */
export interface ReplayGuard {
  firstUse(id: string, until: Date): Promise<boolean>;
}

export interface VonageOptions {
  /** `OTP_VONAGE_BASE_URL`; a local simulator's URL stands in for Vonage's. */
  baseUrl?: string;
  /** Read once per cold start, on first use (a function that only sends or only takes receipts asks once). */
  credentials: () => Promise<VonageCredentials>;
  /** The sender per channel: a number, an alphanumeric id, the numeric Viber Business Message ID, the RCS agent. */
  from: Partial<Record<Channel, string>>;
  /** WhatsApp through Vonage: the approved authentication template. */
  whatsappTemplate?: { name: string; language: string };
  replays?: ReplayGuard;
  timeoutMs?: number;
  now?: () => Date;
}

/**
 * How long a send may take in all, ms. A time-out moves delivery to the next channel at once, though Vonage may
 * have taken the message (then the user gets two, both paid): long enough that a slow but accepted send is
 * rarely abandoned, and shorter than the 8 s a silent channel is given, so giving up never comes later than the
 * channel switch would. The same limit as the AWS clients' (aws-errors.ts).
 */
const VONAGE_TIMEOUT_MS = 5_000;

/** HTTP statuses of the Messages API that say what is wrong on our side. */
const STATUS_CODES: Readonly<Record<number, ProviderErrorCode>> = {
  400: 'invalid_request',
  401: 'access_denied',
  403: 'access_denied',
  422: 'invalid_request',
  429: 'throttled',
};

/** Viber and RCS TTL bounds (seconds). */
const VIBER_TTL = { min: 30, max: 259_200 };
const RCS_TTL = { min: 20, max: 259_200 };

const remainingSeconds = (
  expiresAt: string | undefined,
  now: Date,
  bounds: { min: number; max: number },
): number => {
  if (!expiresAt) throw new Error('vonage needs the code expiry for the message TTL');
  const remaining = Math.floor((Date.parse(expiresAt) - now.getTime()) / 1000);
  if (!(remaining >= bounds.min)) throw new Error(`The code expires in ${remaining} s: too soon to send`);
  return Math.min(remaining, bounds.max);
};

/** A message status webhook's body: `message_uuid`, `status`, and `client_ref` when we set one. */
function readStatus(
  json: unknown,
): { message_uuid: string; status: string; client_ref?: string } | undefined {
  if (!isObject(json)) return undefined;
  const { message_uuid, status, client_ref } = json;
  if (!isText(message_uuid, 200, 1) || !isText(status, 50) || !isOptionalText(client_ref, 100))
    return undefined;
  return { message_uuid, status, ...(client_ref !== undefined && { client_ref }) };
}

/** `delivered` and `read` settle; `rejected` (also TTL expiry) and `undeliverable` fail; `submitted`: none. */
const vonageStatus = (status: string): Receipt['status'] | undefined =>
  status === 'delivered' || status === 'read'
    ? 'delivered'
    : status === 'rejected' || status === 'undeliverable' || status === 'failed'
      ? 'failed'
      : undefined;

export class VonageProvider implements Provider {
  readonly name = VONAGE_PROVIDER_NAME;

  constructor(private readonly options: VonageOptions) {}

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  /** The Messages API body for one message. */
  body(message: OutboundMessage): Record<string, unknown> {
    const from = this.options.from[message.channel];
    if (!from) throw new Error(`vonage has no sender for ${message.channel}`);
    const common = { to: message.to.replace(/^\+/, ''), from, client_ref: message.reference };
    switch (message.channel) {
      case 'sms':
        return { ...common, channel: 'sms', message_type: 'text', text: message.body };
      case 'viber':
        return {
          ...common,
          channel: 'viber_service',
          message_type: 'text',
          text: message.body,
          // No `type`: Vonage documents it for Viber templates only, which it sets up per account; a text
          // message is `message_type: text` (Messages API reference; the Node SDK's ViberService says the same).
          viber_service: {
            ttl: remainingSeconds(message.expiresAt, this.now(), VIBER_TTL),
            category: 'transaction',
          },
        };
      case 'rcs':
        return {
          ...common,
          channel: 'rcs',
          message_type: 'text',
          text: message.body,
          ttl: remainingSeconds(message.expiresAt, this.now(), RCS_TTL),
        };
      case 'whatsapp': {
        const template = this.options.whatsappTemplate;
        if (!template) throw new Error('vonage has no WhatsApp template');
        assertWhatsAppSendable(message.expiresAt, this.now());
        const { type, template: content } = authenticationTemplateMessage({
          to: message.to,
          code: message.code,
          templateName: template.name,
          language: template.language,
          reference: message.reference,
        });
        return {
          ...common,
          channel: 'whatsapp',
          message_type: 'custom',
          custom: { type, template: content },
        };
      }
      default:
        throw new Error(`vonage does not carry ${message.channel}`);
    }
  }

  minimumLifeSeconds(channel: Channel): number {
    return channel === 'viber'
      ? VIBER_TTL.min
      : channel === 'rcs'
        ? RCS_TTL.min
        : channel === 'whatsapp'
          ? WHATSAPP_MIN_TTL_SECONDS
          : 0;
  }

  async send(message: OutboundMessage): Promise<ProviderAnswer> {
    const body = this.body(message);
    const { applicationId, privateKey } = await this.options.credentials();
    let response: Response;
    try {
      response = await fetch(`${this.options.baseUrl ?? DEFAULT_VONAGE_BASE_URL}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          authorization: `Bearer ${applicationJwt(applicationId, privateKey, this.now())}`,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? VONAGE_TIMEOUT_MS),
      });
    } catch (error) {
      const timedOut = (error as { name?: unknown }).name === 'TimeoutError';
      throw new ProviderError(
        timedOut ? 'timeout' : 'provider_error',
        `Vonage: ${error instanceof Error ? error.message : 'request failed'}`,
      );
    }
    const answer = (await response.json().catch(() => ({}))) as {
      message_uuid?: unknown;
      title?: unknown;
      detail?: unknown;
      invalid_parameters?: unknown;
    };
    if (response.ok && typeof answer.message_uuid === 'string')
      return { status: 'accepted', messageId: answer.message_uuid };
    // A request refused for its `to` is a refusal of the number; anything else (credentials, balance,
    // throttling, Vonage down, our own bad sender) is thrown and says nothing about the number.
    // A list in Vonage's OpenAPI document, a single object in its Node SDK's types: either is read.
    const invalid = [answer.invalid_parameters].flat() as { name?: unknown }[];
    const refusesNumber =
      (response.status === 400 || response.status === 422) &&
      invalid.some((parameter) => typeof parameter === 'object' && parameter?.name === 'to');
    const reason = typeof answer.title === 'string' ? answer.title.slice(0, 200) : `HTTP ${response.status}`;
    if (refusesNumber) return { status: 'rejected', reason };
    throw new ProviderError(
      STATUS_CODES[response.status] ?? 'provider_error',
      `Vonage answered HTTP ${response.status}: ${reason}`,
    );
  }

  async parseReceipt(request: ReceiptRequest, now: Date): Promise<Receipt | undefined> {
    const { signatureSecret } = await this.options.credentials();
    const claims = verifySignedWebhook(request.headers.authorization, request.body, signatureSecret, now);
    if (!claims) return undefined;
    let parsed;
    try {
      parsed = readStatus(JSON.parse(request.body));
    } catch {
      return undefined;
    }
    if (!parsed) return undefined;
    // The token is spent only once it was proven Vonage's; remembered past the window in which it is accepted.
    const replays = this.options.replays;
    if (!replays) return undefined;
    const until = new Date((claims.iat + 2 * 300) * 1000);
    if (!(await replays.firstUse(`${VONAGE_PROVIDER_NAME}#${claims.jti}`, until))) return undefined;
    const status = vonageStatus(parsed.status);
    const reference = parsed.client_ref;
    // A signed status that is no receipt for us (submitted; no client_ref) is acknowledged and changes nothing.
    if (!status || !reference) return { reference: '', messageId: parsed.message_uuid, status: 'failed' };
    return { reference, messageId: parsed.message_uuid, status };
  }
}
