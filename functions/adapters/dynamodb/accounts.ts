/**
 * What a dashboard does to accounts: services, API keys, templates, delivery rules, prices, balance.
 * Used by `npm run admin`, the local stack's seed and the tests; never on a request path.
 */
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import type { Service, Template } from '../../core/model';
import type { Random } from '../../core/ports';
import type { Channel } from '../../core/routing';
import { hashApiKey } from '../crypto';
import {
  apiKeyFromItem,
  apiKeyToItems,
  serviceFromItem,
  serviceToItem,
  templateFromItem,
  templateToItem,
} from './items';
import { SERVICE_CHILD_PREFIX, keys } from './keys';
import { queryServiceChildren } from './service-children';

export interface NewService {
  name: string;
  balance: number;
  channels: Channel[];
  /** Text of a default template with `{code}`; none: the service starts without a default template. */
  defaultTemplateBody?: string;
}

export interface IssuedKey {
  /** Shown once; only its SHA-256 is stored. */
  apiKey: string;
  /** First characters of the hash: names the key for listing and revoking without revealing it. */
  keyId: string;
}

export interface ChargeLine {
  at: string;
  verificationSid: string;
  amount: number;
}

const KEY_ID_LENGTH = 12;

export class AccountStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly random: Random,
  ) {}

  async createService(input: NewService, now = new Date()): Promise<Service> {
    const template: Template | undefined = input.defaultTemplateBody
      ? { sid: this.random.sid('HX'), body: input.defaultTemplateBody, locale: 'en' }
      : undefined;
    const service: Service = {
      sid: this.random.sid('VA'),
      name: input.name,
      balance: input.balance,
      enabledChannels: input.channels,
      rules: { blockedCountries: [], blockedPrefixes: [] },
      prices: {},
      ...(template && { defaultTemplate: template }),
      createdAt: now.toISOString(),
      webhookEndpoints: [],
    };
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.tableName,
              Item: serviceToItem(service),
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          ...(template
            ? [{ Put: { TableName: this.tableName, Item: templateToItem(service.sid, template) } }]
            : []),
        ],
      }),
    );
    return service;
  }

  async getService(serviceSid: string): Promise<Service | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.service(serviceSid), ConsistentRead: true }),
    );
    return Item && serviceFromItem(Item);
  }

  async issueApiKey(serviceSid: string, now = new Date()): Promise<IssuedKey> {
    await this.requireService(serviceSid);
    const apiKey = `otpk_${randomBytes(32).toString('base64url')}`;
    const keyHash = hashApiKey(apiKey);
    const [lookup, pointer] = apiKeyToItems({ keyHash, serviceSid, createdAt: now.toISOString() });
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.tableName,
              Item: lookup!,
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          { Put: { TableName: this.tableName, Item: pointer! } },
        ],
      }),
    );
    return { apiKey, keyId: keyHash.slice(0, KEY_ID_LENGTH) };
  }

  async listApiKeys(serviceSid: string): Promise<{ keyId: string; createdAt: string; revokedAt?: string }[]> {
    const items = await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.apiKey);
    return items.map(apiKeyFromItem).map((record) => ({
      keyId: record.keyHash.slice(0, KEY_ID_LENGTH),
      createdAt: record.createdAt,
      ...(record.revokedAt && { revokedAt: record.revokedAt }),
    }));
  }

  /** Revokes the service's key whose id (hash prefix) is `keyId`; false when there is none. */
  async revokeApiKey(serviceSid: string, keyId: string, now = new Date()): Promise<boolean> {
    const items = await this.queryChildren(serviceSid, `${SERVICE_CHILD_PREFIX.apiKey}${keyId}`);
    // The whole id, never a prefix of it.
    const record = items.map(apiKeyFromItem).find((key) => key.keyHash.slice(0, KEY_ID_LENGTH) === keyId);
    if (!record) return false;
    const update = (key: { pk: string; sk: string }) => ({
      Update: {
        TableName: this.tableName,
        Key: key,
        UpdateExpression: 'SET revoked_at = :at',
        ExpressionAttributeValues: { ':at': now.toISOString() },
      },
    });
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          update(keys.apiKey(record.keyHash)),
          update(keys.serviceApiKey(serviceSid, record.keyHash)),
        ],
      }),
    );
    return true;
  }

  /** Adds to the balance (units of 0.0001 USD) atomically; returns the new balance. */
  async topUp(serviceSid: string, units: number): Promise<number> {
    const { Attributes } = await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.service(serviceSid),
        UpdateExpression: 'ADD balance :units',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':units': units },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Attributes!.balance as number;
  }

  async addTemplate(serviceSid: string, body: string, locale = 'en'): Promise<Template> {
    await this.requireService(serviceSid);
    if (!body.includes('{code}')) throw new Error('A template needs the {code} placeholder');
    const template: Template = { sid: this.random.sid('HX'), body, locale };
    await this.client.send(
      new PutCommand({ TableName: this.tableName, Item: templateToItem(serviceSid, template) }),
    );
    return template;
  }

  async listTemplates(serviceSid: string): Promise<Template[]> {
    return (await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.template)).map(templateFromItem);
  }

  async setDefaultTemplate(serviceSid: string, templateSid: string): Promise<void> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.template(serviceSid, templateSid) }),
    );
    if (!Item) throw new Error(`No template ${templateSid} in service ${serviceSid}`);
    await this.updateService(serviceSid, 'SET default_template = :template', {
      ':template': templateFromItem(Item),
    });
  }

  async clearDefaultTemplate(serviceSid: string): Promise<void> {
    await this.updateService(serviceSid, 'REMOVE default_template', undefined);
  }

  async deleteTemplate(serviceSid: string, templateSid: string): Promise<void> {
    await this.client.send(
      new DeleteCommand({ TableName: this.tableName, Key: keys.template(serviceSid, templateSid) }),
    );
  }

  async setChannels(serviceSid: string, channels: Channel[]): Promise<void> {
    await this.updateService(serviceSid, 'SET enabled_channels = :channels', { ':channels': channels });
  }

  /** Blocks a country (ISO alpha-2) or an E.164 prefix. */
  async setRules(serviceSid: string, rules: Service['rules']): Promise<void> {
    await this.updateService(serviceSid, 'SET blocked_countries = :countries, blocked_prefixes = :prefixes', {
      ':countries': rules.blockedCountries,
      ':prefixes': rules.blockedPrefixes,
    });
  }

  async setPrice(serviceSid: string, country: string, units: number): Promise<void> {
    await this.updateService(
      serviceSid,
      'SET prices.#country = :units',
      { ':units': units },
      { '#country': country },
    );
  }

  async removePrice(serviceSid: string, country: string): Promise<void> {
    await this.updateService(serviceSid, 'REMOVE prices.#country', undefined, { '#country': country });
  }

  async listCharges(serviceSid: string): Promise<ChargeLine[]> {
    return (await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.charge)).map((item) => ({
      at: item.at as string,
      verificationSid: item.verification_sid as string,
      amount: item.amount as number,
    }));
  }

  private async requireService(serviceSid: string): Promise<void> {
    if (!(await this.getService(serviceSid))) throw new Error(`No service ${serviceSid}`);
  }

  private async updateService(
    serviceSid: string,
    expression: string,
    values: Record<string, unknown> | undefined,
    names?: Record<string, string>,
  ): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.service(serviceSid),
        UpdateExpression: expression,
        ConditionExpression: 'attribute_exists(pk)',
        ...(values && { ExpressionAttributeValues: values }),
        ...(names && { ExpressionAttributeNames: names }),
      }),
    );
  }

  private queryChildren(serviceSid: string, prefix: string): Promise<Record<string, unknown>[]> {
    return queryServiceChildren(this.client, this.tableName, serviceSid, prefix, true);
  }
}
