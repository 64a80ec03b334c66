import type {
  OutboundMessage,
  Provider,
  ProviderAnswer,
  Receipt,
  ReceiptRequest,
} from '../../core/providers';
import type { KeyRing } from '../keyring';
import { isObject, isText } from '../shape';
import { SIGNATURE_HEADER, verifySignature } from './signature';

/**
 * A carrier gateway reached over HTTP that carries every channel: `POST {baseUrl}/messages` with
 * `{channel, to, body, reference}` answers `{status: "accepted", messageId}` or `{status: "rejected", reason}`,
 * and receipts come back signed to `POST /v2/Callbacks/carrier`. The local stack's simulated carrier speaks
 * exactly this; a real gateway is configured with `OTP_CARRIER_URL`.
 */
const CARRIER_PROVIDER_NAME = 'carrier';

/** The gateway's answer to a message: thrown when it is neither an acceptance nor a refusal. */
function readAnswer(body: unknown): ProviderAnswer {
  if (isObject(body)) {
    if (body.status === 'accepted' && isText(body.messageId, 200, 1))
      return { status: 'accepted', messageId: body.messageId };
    if (body.status === 'rejected' && isText(body.reason, 500))
      return { status: 'rejected', reason: body.reason };
  }
  throw new Error('Carrier answered a body that is neither accepted nor rejected');
}

/** A signed receipt's body: `{reference, messageId, status: delivered | failed}`. */
function readReceipt(body: unknown): Receipt | undefined {
  if (!isObject(body) || !isText(body.reference, 100) || !isText(body.messageId, 200)) return undefined;
  if (body.status !== 'delivered' && body.status !== 'failed') return undefined;
  return { reference: body.reference, messageId: body.messageId, status: body.status };
}

export interface HttpCarrierOptions {
  baseUrl: string | undefined;
  /**
   * Holds `carrier-token` (sent, base64url, as a bearer token with each message) and `receipt:carrier` (verifies
   * receipt signatures); each is taken on first use, so a function that only sends or only takes receipts
   * needs only that one (both are in the carrier key secret on AWS).
   */
  keys: KeyRing;
  timeoutMs?: number;
}

/** What the carrier protocol posts: the rendered message, not the code as data nor the country. */
export type CarrierWireMessage = Pick<OutboundMessage, 'channel' | 'to' | 'body' | 'reference' | 'expiresAt'>;

export class HttpCarrierProvider implements Provider {
  readonly name = CARRIER_PROVIDER_NAME;

  constructor(private readonly options: HttpCarrierOptions) {}

  async send(message: OutboundMessage): Promise<ProviderAnswer> {
    if (!this.options.baseUrl) throw new Error('No carrier configured (OTP_CARRIER_URL)');
    const response = await fetch(`${this.options.baseUrl}/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${this.options.keys.key('carrier-token').toString('base64url')}`,
      },
      body: JSON.stringify({
        channel: message.channel,
        to: message.to,
        body: message.body,
        reference: message.reference,
        ...(message.expiresAt !== undefined && { expiresAt: message.expiresAt }),
      } satisfies CarrierWireMessage),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 3000),
    });
    if (!response.ok) throw new Error(`Carrier answered HTTP ${response.status}`);
    return readAnswer(await response.json());
  }

  parseReceipt(request: ReceiptRequest, now: Date): Receipt | undefined {
    const secret = this.options.keys.key('receipt:carrier');
    if (!verifySignature(secret, request.body, request.headers[SIGNATURE_HEADER], now)) {
      return undefined;
    }
    try {
      return readReceipt(JSON.parse(request.body));
    } catch {
      return undefined;
    }
  }
}
