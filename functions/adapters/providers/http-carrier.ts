import * as z from 'zod';
import type {
  OutboundMessage,
  Provider,
  ProviderAnswer,
  ProviderRegistry,
  Receipt,
  ReceiptRequest,
} from '../../core/providers';
import type { KeyRing } from '../keyring';
import { SIGNATURE_HEADER, verifySignature } from './signature';

/**
 * A carrier gateway reached over HTTP that carries every channel: `POST {baseUrl}/messages` with
 * `{channel, to, body, reference}` answers `{status: "accepted", messageId}` or `{status: "rejected", reason}`,
 * and receipts come back signed to `POST /v2/Callbacks/carrier`. The local stack's simulated carrier speaks
 * exactly this; a real gateway is configured with `OTP_CARRIER_URL`.
 */
export const CARRIER_PROVIDER_NAME = 'carrier';

const answerSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('accepted'), messageId: z.string().min(1).max(200) }),
  z.object({ status: z.literal('rejected'), reason: z.string().max(500) }),
]);

const receiptSchema = z.object({
  reference: z.string().max(100),
  messageId: z.string().max(200),
  status: z.enum(['delivered', 'failed']),
});

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
      body: JSON.stringify(message),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 3000),
    });
    if (!response.ok) throw new Error(`Carrier answered HTTP ${response.status}`);
    return answerSchema.parse(await response.json());
  }

  parseReceipt(request: ReceiptRequest, now: Date): Receipt | undefined {
    const secret = this.options.keys.key('receipt:carrier');
    if (!verifySignature(secret, request.body, request.headers[SIGNATURE_HEADER], now)) {
      return undefined;
    }
    try {
      const parsed = receiptSchema.safeParse(JSON.parse(request.body));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Every channel goes to one provider until per-channel providers are configured. */
export function singleProviderRegistry(provider: Provider): ProviderRegistry {
  return {
    forChannel: () => provider,
    byName: (name) => (name === provider.name ? provider : undefined),
  };
}
