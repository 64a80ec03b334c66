/** A registered endpoint. The signing secrets stay sealed; only the signer opens them. */
export interface WebhookEndpoint {
  sid: string;
  serviceSid: string;
  url: string;
  enabled: boolean;
  /**
   * How many times it was disabled (absent: never). A job carries the count its endpoint had when the event was
   * queued, so a retry queued before a disable is dropped even if the endpoint is enabled again meanwhile.
   */
  disableCount?: number;
  createdAt: string;
  /** The current signing secret, encrypted. */
  sealedSecret: string;
  /** After a rotation, the previous secret also signs until `previousSecretUntil`, so receivers can switch. */
  previousSealedSecret?: string;
  previousSecretUntil?: string;
}

export const MAX_WEBHOOK_ENDPOINTS_PER_SERVICE = 10;

/** What an owner sees of an endpoint (the console and the admin command): never a secret, sealed or not. */
export const webhookEndpointView = (endpoint: WebhookEndpoint) => ({
  endpointSid: endpoint.sid,
  url: endpoint.url,
  enabled: endpoint.enabled,
  createdAt: endpoint.createdAt,
  previousSecretUntil: endpoint.previousSecretUntil ?? null,
});

export interface WebhookEndpointStore {
  /** The service's endpoints, enabled or not. */
  listEndpoints(serviceSid: string): Promise<WebhookEndpoint[]>;
  getEndpoint(serviceSid: string, endpointSid: string): Promise<WebhookEndpoint | undefined>;
}
