import type { WebhookEndpoint, WebhookSigner } from '../../core/webhooks';
import { toKeyRing, type KeySource } from '../keyring';
import { open, seal } from '../sealing';
import { signWebhookContent } from './signing';

/**
 * Webhook signing secrets are stored encrypted (AES-256-GCM with the `webhook-secrets` key), since the
 * sender must sign with them; each is bound to its endpoint, so a sealed secret copied to another item opens
 * nowhere. The plain secret is shown once, when it is made.
 */
export class WebhookSecretVault {
  private readonly key: Buffer;

  /** A key ring holding the `webhook-secrets` key, or a master key (local stack, tests). */
  constructor(keys: KeySource) {
    this.key = toKeyRing(keys).key('webhook-secrets');
  }

  seal(serviceSid: string, endpointSid: string, secret: string): string {
    return seal(this.key, secret, `${serviceSid}/${endpointSid}`);
  }

  open(serviceSid: string, endpointSid: string, sealed: string): string {
    return open(this.key, sealed, `${serviceSid}/${endpointSid}`);
  }

  /** The secrets a delivery is signed with now: the current one, and the previous one during its overlap. */
  signingSecrets(endpoint: WebhookEndpoint, now: Date): string[] {
    const secrets = [this.open(endpoint.serviceSid, endpoint.sid, endpoint.sealedSecret)];
    if (
      endpoint.previousSealedSecret &&
      endpoint.previousSecretUntil &&
      now.toISOString() < endpoint.previousSecretUntil
    ) {
      try {
        secrets.push(this.open(endpoint.serviceSid, endpoint.sid, endpoint.previousSealedSecret));
      } catch {
        // Sealed under a master key that has since been rotated: the current secret alone signs.
      }
    }
    return secrets;
  }
}

/** Signs with every secret in force, space-separated, as Standard Webhooks does during a rotation. */
export class EndpointSigner implements WebhookSigner {
  constructor(private readonly vault: WebhookSecretVault) {}

  signature(endpoint: WebhookEndpoint, content: string, now: Date): string {
    return this.vault
      .signingSecrets(endpoint, now)
      .map((secret) => signWebhookContent(secret, content))
      .join(' ');
  }
}
