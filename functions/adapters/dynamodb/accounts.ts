/**
 * What a dashboard does to accounts: services, API keys, templates, delivery rules, prices, balance.
 * Used by `npm run admin`, the local stack's seed and the tests; never on a request path.
 */
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { defaultAllowedCountries } from '../../core/guard/high-risk-countries';
import type { CountryCaps } from '../../core/guard/model';
import type { Service, Template } from '../../core/model';
import type { ApiKeyTagger, Random } from '../../core/ports';
import type { Channel } from '../../core/routing';
import { hashApiKey, newApiKey } from '../crypto';
import {
  apiKeyFromItem,
  apiKeyToItems,
  serviceDirectoryToItem,
  serviceFromItem,
  serviceToItem,
  templateFromItem,
  templateToItem,
} from './items';
import { SERVICE_CHILD_PREFIX, keys } from './keys';
import { queryAll } from './requests';
import { queryServiceChildren } from './service-children';

export interface NewService {
  name: string;
  balance: number;
  channels: Channel[];
  /** Text of a default template with `{code}`; none: the service starts without a default template. */
  defaultTemplateBody?: string;
  /** Countries it may send to; absent: every served country but the high-risk ones (`defaultAllowedCountries`). */
  allowedCountries?: string[];
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

/** A console user's membership of a service (`member add`; the console reads it on every request). */
export interface Membership {
  userId: string;
  serviceSid: string;
  /** The service's name when the member was added, for the user's list of services. */
  serviceName: string;
  /** Who the user is, for people (an e-mail address); the user id is what the sign-in token carries. */
  label?: string;
  addedAt: string;
}

/** An entry of the directory of all services (the console's operator view). */
export interface DirectoryEntry {
  serviceSid: string;
  name: string;
  createdAt: string;
}

const KEY_ID_LENGTH = 12;

export class AccountStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly random: Random,
    /** The deployment's API key tag; without it, keys are issued in the legacy format (core/api-key-format.ts). */
    private readonly apiKeyTagger?: ApiKeyTagger,
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
      rules: {
        blockedCountries: [],
        blockedPrefixes: [],
        allowedCountries: input.allowedCountries ?? defaultAllowedCountries(),
      },
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
          { Put: { TableName: this.tableName, Item: serviceDirectoryToItem(service) } },
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
    const apiKey = this.apiKeyTagger
      ? await newApiKey(this.apiKeyTagger)
      : `otpk_${randomBytes(32).toString('base64url')}`;
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

  /**
   * The service's keys with the minute each was last used: the start of the per-key limit's window, which the key's
   * own item keeps (`rate_window`); read with one BatchGetItem, so nothing on the request path writes more for it.
   */
  async listApiKeysWithUse(
    serviceSid: string,
  ): Promise<{ keyId: string; createdAt: string; revokedAt?: string; lastUsedAt?: string }[]> {
    const records = (await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.apiKey)).map(apiKeyFromItem);
    const lastUsed = new Map<string, number>();
    for (let i = 0; i < records.length; i += 100) {
      const { Responses } = await this.client.send(
        new BatchGetCommand({
          RequestItems: {
            [this.tableName]: {
              Keys: records.slice(i, i + 100).map((record) => keys.apiKey(record.keyHash)),
              ProjectionExpression: 'key_hash, rate_window',
            },
          },
        }),
      );
      for (const item of Responses?.[this.tableName] ?? []) {
        if (typeof item.rate_window === 'number') lastUsed.set(item.key_hash as string, item.rate_window);
      }
    }
    return records.map((record) => {
      const used = lastUsed.get(record.keyHash);
      return {
        keyId: record.keyHash.slice(0, KEY_ID_LENGTH),
        createdAt: record.createdAt,
        ...(record.revokedAt && { revokedAt: record.revokedAt }),
        ...(used !== undefined && { lastUsedAt: new Date(used).toISOString() }),
      };
    });
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

  /** Blocks a country (ISO alpha-2) or an E.164 prefix. The allow-list is left as it is (`setAllowedCountries`). */
  async setRules(
    serviceSid: string,
    rules: Pick<Service['rules'], 'blockedCountries' | 'blockedPrefixes'>,
  ): Promise<void> {
    await this.updateService(serviceSid, 'SET blocked_countries = :countries, blocked_prefixes = :prefixes', {
      ':countries': rules.blockedCountries,
      ':prefixes': rules.blockedPrefixes,
    });
  }

  /**
   * The countries the service sends to (ISO alpha-2, validated by the caller against ROUTES). `undefined` removes
   * the list: every served country, as for a service made before the list existed. An empty list means none.
   */
  async setAllowedCountries(serviceSid: string, countries: string[] | undefined): Promise<void> {
    if (countries === undefined) await this.updateService(serviceSid, 'REMOVE allowed_countries', undefined);
    else
      await this.updateService(serviceSid, 'SET allowed_countries = :countries', {
        ':countries': [...new Set(countries)].sort(),
      });
  }

  /** Whether a send's `RiskCheck=disable` skips the pumping guard for this service (default: it does not). */
  async setRiskCheckOptOut(serviceSid: string, allowed: boolean): Promise<void> {
    if (allowed)
      await this.updateService(serviceSid, 'SET guard_risk_check_opt_out = :yes', { ':yes': true });
    else await this.updateService(serviceSid, 'REMOVE guard_risk_check_opt_out', undefined);
  }

  /**
   * The owner's per-country caps (`*`: every country without its own), validated by the caller
   * (core/guard/caps.ts). `undefined` removes them all. Read by the guard's consumer with the service item.
   */
  async setGuardCaps(serviceSid: string, caps: Record<string, CountryCaps> | undefined): Promise<void> {
    if (caps === undefined) await this.updateService(serviceSid, 'REMOVE guard_caps', undefined);
    else await this.updateService(serviceSid, 'SET guard_caps = :caps', { ':caps': caps });
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

  /**
   * Makes a console user a member of a service: one item under the user (so signing in lists the user's
   * services with one query) and one under the service (so `member list` needs one query), in one transaction
   * that also requires the service to exist. Adding an existing member again updates its label.
   */
  async addMember(serviceSid: string, userId: string, label?: string, now = new Date()): Promise<Membership> {
    const service = await this.getService(serviceSid);
    if (!service) throw new Error(`No service ${serviceSid}`);
    const membership: Membership = {
      userId,
      serviceSid,
      serviceName: service.name,
      ...(label && { label }),
      addedAt: now.toISOString(),
    };
    const fields = {
      type: 'member',
      user_id: userId,
      service_sid: serviceSid,
      service_name: service.name,
      ...(label && { label }),
      added_at: membership.addedAt,
    };
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: this.tableName,
              Key: keys.service(serviceSid),
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
          { Put: { TableName: this.tableName, Item: { ...keys.member(userId, serviceSid), ...fields } } },
          {
            Put: {
              TableName: this.tableName,
              Item: { ...keys.serviceMember(serviceSid, userId), ...fields },
            },
          },
        ],
      }),
    );
    return membership;
  }

  /** False when the user was not a member. */
  async removeMember(serviceSid: string, userId: string): Promise<boolean> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.serviceMember(serviceSid, userId) }),
    );
    if (!Item) return false;
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          { Delete: { TableName: this.tableName, Key: keys.member(userId, serviceSid) } },
          { Delete: { TableName: this.tableName, Key: keys.serviceMember(serviceSid, userId) } },
        ],
      }),
    );
    return true;
  }

  async listMembers(serviceSid: string): Promise<Membership[]> {
    return (await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.member)).map(membershipFromItem);
  }

  /** The services a console user belongs to (one query under the user). */
  async membershipsOf(userId: string): Promise<Membership[]> {
    return (await this.queryPartition(keys.member(userId, '').pk)).map(membershipFromItem);
  }

  /** One GetItem: whether the user is a member of the service. */
  async isMember(userId: string, serviceSid: string): Promise<boolean> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.member(userId, serviceSid),
        ProjectionExpression: 'pk',
      }),
    );
    return Item !== undefined;
  }

  /** Every service `createService` made (its directory entry): the operator's list, without a Scan. */
  async listAllServices(): Promise<DirectoryEntry[]> {
    return (await this.queryPartition(keys.serviceDirectory('').pk)).map((item) => ({
      serviceSid: item.service_sid as string,
      name: item.name as string,
      createdAt: item.created_at as string,
    }));
  }

  private queryPartition(pk: string): Promise<Record<string, unknown>[]> {
    return queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    });
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

const membershipFromItem = (item: Record<string, unknown>): Membership => ({
  userId: item.user_id as string,
  serviceSid: item.service_sid as string,
  serviceName: item.service_name as string,
  ...(typeof item.label === 'string' && { label: item.label }),
  addedAt: item.added_at as string,
});
