/**
 * Webhook endpoints in the single table: one item per endpoint under its service (`SERVICE#<VA>` /
 * `WEBHOOK#<WH>`), and the set of endpoint SIDs on the service item, kept in the same transaction, which also
 * caps their number. The events function lists a service's endpoints with one query; the sender reads one.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { Random } from '../../core/ports';
// From the modules, not the index: the index also re-exports the URL policy (ipaddr.js), which the events
// function's bundle does not need.
import {
  WEBHOOK_DELIVERY_RECORD_DAYS,
  type WebhookDeliveryLog,
  type WebhookDeliveryRecord,
} from '../../core/webhooks/deliveries';
import {
  MAX_WEBHOOK_ENDPOINTS_PER_SERVICE,
  type WebhookEndpoint,
  type WebhookEndpointStore,
} from '../../core/webhooks/endpoints';
import type { WebhookEventType } from '../../core/webhooks/events';
import type { Logger } from '../logger';
import type { WebhookSecretVault } from '../webhooks/secrets';
import { newWebhookSecret } from '../webhooks/signing';
import { webhookEndpointFromItem, webhookEndpointToItem } from './items';
import { SERVICE_CHILD_PREFIX, keys } from './keys';
import { updateExisting } from './requests';
import { queryServiceChildren } from './service-children';

/** After a rotation the previous secret signs too, for this long, so receivers can switch without a gap. */
const PREVIOUS_SECRET_OVERLAP_SECONDS = 24 * 3600;

export type AddEndpointResult =
  { ok: true; endpoint: WebhookEndpoint; secret: string } | { ok: false; reason: 'no_service' | 'too_many' };

export class DynamoWebhookEndpoints implements WebhookEndpointStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async listEndpoints(serviceSid: string): Promise<WebhookEndpoint[]> {
    const items = await queryServiceChildren(
      this.client,
      this.tableName,
      serviceSid,
      SERVICE_CHILD_PREFIX.webhookEndpoint,
    );
    return items.map(webhookEndpointFromItem);
  }

  async getEndpoint(serviceSid: string, endpointSid: string): Promise<WebhookEndpoint | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.webhookEndpoint(serviceSid, endpointSid) }),
    );
    return Item && webhookEndpointFromItem(Item);
  }

  /** Registers an enabled endpoint with a new secret; the secret is returned once and stored sealed. */
  async addEndpoint(
    serviceSid: string,
    url: string,
    vault: WebhookSecretVault,
    random: Random,
    now = new Date(),
  ): Promise<AddEndpointResult> {
    const sid = random.sid('WH');
    const secret = newWebhookSecret();
    const endpoint: WebhookEndpoint = {
      sid,
      serviceSid,
      url,
      enabled: true,
      createdAt: now.toISOString(),
      sealedSecret: vault.seal(serviceSid, sid, secret),
    };
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: keys.service(serviceSid),
                UpdateExpression: 'ADD webhook_endpoints :sid',
                ConditionExpression:
                  'attribute_exists(pk) AND (attribute_not_exists(webhook_endpoints) OR size(webhook_endpoints) < :max)',
                ExpressionAttributeValues: {
                  ':sid': new Set([sid]),
                  ':max': MAX_WEBHOOK_ENDPOINTS_PER_SERVICE,
                },
              },
            },
            {
              Put: {
                TableName: this.tableName,
                Item: webhookEndpointToItem(endpoint),
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
          ],
        }),
      );
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      if (error.CancellationReasons?.[0]?.Code !== 'ConditionalCheckFailed') throw error;
      const exists = await this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: keys.service(serviceSid),
          ProjectionExpression: 'pk',
        }),
      );
      return { ok: false, reason: exists.Item ? 'too_many' : 'no_service' };
    }
    return { ok: true, endpoint, secret };
  }

  /**
   * False when there is no such endpoint. A disable is counted: jobs queued before it carry the older count and
   * are dropped when their turn comes, whether or not the endpoint has been enabled again by then.
   */
  async setEnabled(serviceSid: string, endpointSid: string, enabled: boolean): Promise<boolean> {
    return enabled
      ? this.updateEndpoint(serviceSid, endpointSid, 'SET enabled = :enabled', { ':enabled': true })
      : this.updateEndpoint(serviceSid, endpointSid, 'SET enabled = :enabled ADD disable_count :one', {
          ':enabled': false,
          ':one': 1,
        });
  }

  /**
   * A new secret, returned once. The previous one keeps signing (a second signature in the header) for
   * PREVIOUS_SECRET_OVERLAP_SECONDS; with `immediate` (a leaked secret) it is deleted in the same write, so the
   * next delivery, a retry already queued included, is signed with the new secret alone (the sender reads the
   * endpoint for every delivery and caches nothing). Undefined when there is no such endpoint.
   */
  async rotateSecret(
    serviceSid: string,
    endpointSid: string,
    vault: WebhookSecretVault,
    now = new Date(),
    { immediate = false }: { immediate?: boolean } = {},
  ): Promise<string | undefined> {
    const secret = newWebhookSecret();
    const sealed = vault.seal(serviceSid, endpointSid, secret);
    const rotated = immediate
      ? await this.updateEndpoint(
          serviceSid,
          endpointSid,
          // Also ends the overlap of an earlier rotation: no secret but the new one signs from now on.
          'SET sealed_secret = :sealed REMOVE previous_sealed_secret, previous_secret_until',
          { ':sealed': sealed },
        )
      : await this.updateEndpoint(
          serviceSid,
          endpointSid,
          'SET previous_sealed_secret = sealed_secret, previous_secret_until = :until, sealed_secret = :sealed',
          {
            ':sealed': sealed,
            ':until': new Date(now.getTime() + PREVIOUS_SECRET_OVERLAP_SECONDS * 1000).toISOString(),
          },
        );
    return rotated ? secret : undefined;
  }

  /** False when there is no such endpoint. Jobs already queued for it are dropped when their turn comes. */
  async removeEndpoint(serviceSid: string, endpointSid: string): Promise<boolean> {
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.tableName,
                Key: keys.webhookEndpoint(serviceSid, endpointSid),
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            {
              Update: {
                TableName: this.tableName,
                Key: keys.service(serviceSid),
                UpdateExpression: 'DELETE webhook_endpoints :sid',
                ConditionExpression: 'attribute_exists(pk)',
                ExpressionAttributeValues: { ':sid': new Set([endpointSid]) },
              },
            },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof TransactionCanceledException) return false;
      throw error;
    }
  }

  private updateEndpoint(
    serviceSid: string,
    endpointSid: string,
    expression: string,
    values: Record<string, unknown>,
  ): Promise<boolean> {
    const key = keys.webhookEndpoint(serviceSid, endpointSid);
    return updateExisting(this.client, this.tableName, key, expression, values);
  }
}

/** The console's page of a service's recent deliveries. */
const RECENT_WEBHOOK_DELIVERIES = 50;
/** A verification's deliveries: at most this many records are read (pages of 200), at most 50 kept. */
const VERIFICATION_DELIVERIES_READ = 1000;

/**
 * Delivery records (`WEBHOOKDELIVERY#<VA>` / `<at>#<event>#<endpoint>#<attempt>`): one PutItem per attempt by the
 * sender, which never throws (a failed write is logged and the delivery goes on); bounded Queries for the console.
 */
export class DynamoWebhookDeliveries implements WebhookDeliveryLog {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly logger?: Logger,
  ) {}

  async record(record: WebhookDeliveryRecord): Promise<void> {
    const at = new Date(record.at);
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...keys.webhookDelivery(
              record.serviceSid,
              at,
              record.eventId,
              record.endpointSid,
              record.attempt,
            ),
            endpoint_sid: record.endpointSid,
            event_id: record.eventId,
            event_type: record.eventType,
            ...(record.verificationSid && { verification_sid: record.verificationSid }),
            at: record.at,
            attempt: record.attempt,
            ...(record.status !== undefined && { status_code: record.status }),
            ...(record.error !== undefined && { error_kind: record.error }),
            duration_ms: record.durationMs,
            delivered: record.delivered,
            final: record.final,
            ttl: Math.floor(at.getTime() / 1000) + WEBHOOK_DELIVERY_RECORD_DAYS * 86_400,
          },
          // Only ever a new record: never over a service's other items.
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      this.logger?.log('warn', 'webhook.record_failed', {
        serviceSid: record.serviceSid,
        eventId: record.eventId,
        attempt: record.attempt,
        error: error instanceof Error ? error.name : 'unknown',
      });
    }
  }

  /** The service's latest delivery records, newest first: one Query. */
  async recent(serviceSid: string, limit = RECENT_WEBHOOK_DELIVERIES): Promise<WebhookDeliveryRecord[]> {
    const { Items = [] } = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.webhookDeliveries(serviceSid).pk },
        ScanIndexForward: false,
        Limit: limit,
      }),
    );
    return Items.map((item) => deliveryFromItem(serviceSid, item));
  }

  /**
   * One verification's delivery records, oldest first: the service's records from `from` to `to` (its creation to
   * a day past its expiry), filtered by its SID; at most VERIFICATION_DELIVERIES_READ records read.
   */
  async forVerification(
    serviceSid: string,
    verificationSid: string,
    from: Date,
    to: Date,
    limit = RECENT_WEBHOOK_DELIVERIES,
  ): Promise<{ deliveries: WebhookDeliveryRecord[]; truncated: boolean }> {
    const range = keys.webhookDeliveryRange(serviceSid, from, to);
    const found: WebhookDeliveryRecord[] = [];
    let read = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          FilterExpression: 'verification_sid = :ve',
          ExpressionAttributeValues: {
            ':pk': range.pk,
            ':from': range.skFrom,
            ':to': range.skTo,
            ':ve': verificationSid,
          },
          Limit: 200,
          ...(start && { ExclusiveStartKey: start }),
        }),
      );
      read += page.ScannedCount ?? 0;
      found.push(...(page.Items ?? []).map((item) => deliveryFromItem(serviceSid, item)));
      start = page.LastEvaluatedKey;
    } while (start && read < VERIFICATION_DELIVERIES_READ && found.length < limit);
    return { deliveries: found.slice(0, limit), truncated: start !== undefined };
  }
}

function deliveryFromItem(serviceSid: string, item: Record<string, unknown>): WebhookDeliveryRecord {
  return {
    serviceSid,
    endpointSid: item.endpoint_sid as string,
    eventId: item.event_id as string,
    eventType: item.event_type as WebhookEventType,
    ...(typeof item.verification_sid === 'string' && { verificationSid: item.verification_sid }),
    at: item.at as string,
    attempt: item.attempt as number,
    ...(typeof item.status_code === 'number' && { status: item.status_code }),
    ...(typeof item.error_kind === 'string' && { error: item.error_kind }),
    durationMs: item.duration_ms as number,
    delivered: item.delivered === true,
    final: item.final === true,
  };
}
