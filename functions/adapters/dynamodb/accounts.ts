/**
 * The accounts core's store (core/accounts/ports.ts) on the table: services, API keys, templates, members,
 * operators, credit lines and the audit trail. Every change writes its audit record in the same transaction.
 * Used by the console, `npm run admin`, the local stack's seed and the tests; never on a send's path.
 */
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { keyIdOf } from '../../core/accounts/formats';
import type {
  AccountStore,
  ApiKeyView,
  AuditRecord,
  ChargeLine,
  CreditLine,
  DirectoryEntry,
  ExpectedSettings,
  ItemCount,
  Membership,
  ServiceSettingsChange,
} from '../../core/accounts/ports';
import { SettingsChanged, TOP_UP_KEY_HOURS, TopUpKeyUsed } from '../../core/accounts/ports';
import type { Service, Template } from '../../core/model';
import {
  apiKeyFromItem,
  apiKeyToItems,
  serviceDirectoryToItem,
  serviceFromItem,
  serviceToItem,
  templateFromItem,
  templateToItem,
} from './items';
import { readShardBalances, spreadEvenly } from './balance-shards';
import { SERVICE_CHILD_PREFIX, TABLE_SCHEMA, keys, type ItemKey } from './keys';
import { auditFromItem, auditToItem } from './items';
import { batchGetAll, queryAll, transactSettled } from './requests';
import { queryServiceChildren } from './service-children';

/** Writes of a new spread, while sends keep changing the shards it read. */
const SPREAD_ATTEMPTS = 5;
/** Days a revoked key stays listed (revoked) before the table's TTL removes its items. */
export const REVOKED_KEY_DAYS = 90;
/** The shards one top-up adds to, the poorest first. */
const TOP_UP_SHARDS = 4;
/** Transactions of one top-up while sends in progress cancel it. */
const CREDIT_ATTEMPTS = 6;
/** Reads of the balance after a credit that stands, before a failed one answers an error. */
const BALANCE_READS = 3;

type TransactItem = NonNullable<
  ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']
>[number];

const membershipFromItem = (item: Record<string, unknown>): Membership => ({
  userId: item.user_id as string,
  serviceSid: item.service_sid as string,
  serviceName: item.service_name as string,
  ...(typeof item.label === 'string' && { label: item.label }),
  addedAt: item.added_at as string,
});

/** The UpdateExpression of a settings change: SET and REMOVE clauses, with its names and values. */
function settingsUpdate(change: ServiceSettingsChange): {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
} {
  const set: string[] = [];
  const remove: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const field = (attribute: string, value: unknown, present: boolean) => {
    if (!present) return;
    if (value === undefined) remove.push(attribute);
    else {
      values[`:${attribute}`] = value;
      set.push(`${attribute} = :${attribute}`);
    }
  };
  field('enabled_channels', change.enabledChannels, 'enabledChannels' in change);
  field('blocked_countries', change.blockedCountries, 'blockedCountries' in change);
  field('blocked_prefixes', change.blockedPrefixes, 'blockedPrefixes' in change);
  field('allowed_countries', change.allowedCountries, 'allowedCountries' in change);
  if ('riskCheckOptOut' in change)
    field('guard_risk_check_opt_out', change.riskCheckOptOut ? true : undefined, true);
  field('guard_level', change.guardLevel, 'guardLevel' in change);
  field('guard_safe_list', change.guardSafeList, 'guardSafeList' in change);
  field('guard_caps', change.guardCaps, 'guardCaps' in change);
  field(
    'default_template',
    change.defaultTemplate && {
      sid: change.defaultTemplate.sid,
      body: change.defaultTemplate.body,
      locale: change.defaultTemplate.locale,
    },
    'defaultTemplate' in change,
  );
  field('template_sms_parts', change.templateSmsParts, 'templateSmsParts' in change);
  field('api_key_limit', change.apiKeyLimit, 'apiKeyLimit' in change);
  if (change.price) {
    names['#country'] = change.price.country;
    if (change.price.units === undefined) remove.push('prices.#country');
    else {
      values[':price'] = change.price.units;
      set.push('prices.#country = :price');
    }
  }
  // Every writer of the rules, the guard settings or the channels (the console, the admin command) moves their
  // version, so that a change made on an older copy of them is refused whoever made the changes since.
  const rules = 'blockedCountries' in change || 'blockedPrefixes' in change || 'allowedCountries' in change;
  const guard = 'guardLevel' in change || 'guardSafeList' in change || 'riskCheckOptOut' in change;
  const channels = 'enabledChannels' in change;
  const versions = [
    rules && 'rules_version',
    guard && 'guard_version',
    channels && 'channels_version',
  ].filter((v) => v !== false);
  if (versions.length > 0) values[':one'] = 1;
  const expression = [
    set.length > 0 ? `SET ${set.join(', ')}` : '',
    remove.length > 0 ? `REMOVE ${remove.join(', ')}` : '',
    versions.length > 0 ? `ADD ${versions.map((version) => `${version} :one`).join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return { expression, names, values };
}

export class DynamoAccountStore implements AccountStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** With the whole balance: a service of several balance shards reads them all (one BatchGetItem). */
  async getService(serviceSid: string): Promise<Service | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.service(serviceSid), ConsistentRead: true }),
    );
    return Item && this.withBalance(serviceFromItem(Item));
  }

  /** A service as its item says, its balance summed over its shards when it is spread. */
  private async withBalance(service: Service): Promise<Service> {
    if (service.balanceShards === undefined) return service;
    const balances = await readShardBalances(this.client, this.tableName, service.sid, service.balanceShards);
    return { ...service, balance: balances.reduce((sum, balance) => sum + balance, 0) };
  }

  async getServices(serviceSids: readonly string[]): Promise<(Service | undefined)[]> {
    const items: Record<string, unknown>[] = [];
    // A BatchGetItem holds 100 keys.
    for (let i = 0; i < serviceSids.length; i += 100)
      items.push(
        ...(await batchGetAll(
          this.client,
          this.tableName,
          serviceSids.slice(i, i + 100).map(keys.service),
          true,
        )),
      );
    const found = new Map(items.map((item) => [item.pk, item]));
    return Promise.all(
      serviceSids.map((sid) => {
        const item = found.get(keys.service(sid).pk);
        return item && this.withBalance(serviceFromItem(item));
      }),
    );
  }

  async createService(service: Service, audit: AuditRecord): Promise<void> {
    const template = service.defaultTemplate;
    await this.transact([
      this.put(serviceToItem(service), 'attribute_not_exists(pk)'),
      ...(template ? [this.put(templateToItem(service.sid, template))] : []),
      this.put(serviceDirectoryToItem(service)),
      ...(service.balance !== 0
        ? [
            this.put(
              this.creditItem(service.sid, {
                at: service.createdAt,
                amount: service.balance,
                reason: 'opening',
                auditId: audit.id,
              }),
            ),
          ]
        : []),
      this.put(auditToItem(audit)),
    ]);
  }

  async putApiKey(
    serviceSid: string,
    keyHash: string,
    createdAt: string,
    audit: AuditRecord,
    count: ItemCount & { limit: number },
  ): Promise<boolean> {
    const [lookup, pointer] = apiKeyToItems({ keyHash, serviceSid, createdAt });
    return this.countChange(serviceSid, 'active_api_keys', count, 1, [
      this.put(lookup!, 'attribute_not_exists(pk)'),
      this.put(pointer!),
      this.put(auditToItem(audit)),
    ]);
  }

  async listApiKeys(serviceSid: string): Promise<(ApiKeyView & { keyHash: string })[]> {
    const items = await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.apiKey);
    return items.map(apiKeyFromItem).map((record) => ({
      keyHash: record.keyHash,
      keyId: keyIdOf(record.keyHash),
      createdAt: record.createdAt,
      ...(record.revokedAt && { revokedAt: record.revokedAt }),
    }));
  }

  /**
   * The keys with the minute each was last used: the start of the per-key limit's window, which the key's own
   * item keeps (`rate_window`); read with one BatchGetItem, so nothing on the request path writes more for it.
   */
  async listApiKeysWithUse(serviceSid: string): Promise<ApiKeyView[]> {
    const records = await this.listApiKeys(serviceSid);
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
    return records.map(({ keyHash, ...view }) => {
      const used = lastUsed.get(keyHash);
      return { ...view, ...(used !== undefined && { lastUsedAt: new Date(used).toISOString() }) };
    });
  }

  async revokeApiKey(
    serviceSid: string,
    keyHash: string,
    at: string,
    audit: AuditRecord,
    count: ItemCount,
  ): Promise<boolean> {
    // A revoked key's items go REVOKED_KEY_DAYS later (the table's TTL): issued and revoked without end, they
    // would otherwise grow the table and every keys page, as no count bounds them. Gone, it is an unknown key: 401
    // as before; the audit trail keeps its issue and revoke.
    const expires = Math.ceil(Date.parse(at) / 1000) + REVOKED_KEY_DAYS * 86_400;
    const revoke = (key: ItemKey, condition?: string): TransactItem => ({
      Update: {
        TableName: this.tableName,
        Key: key,
        UpdateExpression: 'SET revoked_at = :at, #ttl = :expires',
        ...(condition && { ConditionExpression: condition }),
        ExpressionAttributeNames: { '#ttl': TABLE_SCHEMA.ttlAttribute },
        ExpressionAttributeValues: { ':at': at, ':expires': expires },
      },
    });
    // Revoked once: a second revoke of the same key must not count it off again.
    return this.countChange(serviceSid, 'active_api_keys', count, -1, [
      revoke(keys.apiKey(keyHash), 'attribute_exists(pk) AND attribute_not_exists(revoked_at)'),
      revoke(keys.serviceApiKey(serviceSid, keyHash)),
      this.put(auditToItem(audit)),
    ]);
  }

  /**
   * A key change with the service item's count of active keys, in one transaction: moved by `by` (an issue below
   * `count.limit`), or, for a service with no count yet, written from `count.counted`. False when a condition
   * failed: the limit reached, a count begun meanwhile, a key revoked meanwhile, or no such service.
   */
  private async countChange(
    serviceSid: string,
    attribute: 'active_api_keys' | 'template_count',
    count: ItemCount & { limit?: number },
    by: 1 | -1,
    items: TransactItem[],
  ): Promise<boolean> {
    const below = count.limit === undefined ? '' : ` AND ${attribute} < :limit`;
    const update: TransactItem = {
      Update: {
        TableName: this.tableName,
        Key: keys.service(serviceSid),
        ...(count.counted === undefined
          ? {
              UpdateExpression: `ADD ${attribute} :by`,
              ConditionExpression: `attribute_exists(pk) AND attribute_exists(${attribute})${below}`,
              ExpressionAttributeValues: { ':by': by, ...(below && { ':limit': count.limit }) },
            }
          : {
              UpdateExpression: `SET ${attribute} = :count`,
              ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(${attribute})`,
              ExpressionAttributeValues: { ':count': count.counted + by },
            }),
      },
    };
    try {
      await this.transact([update, ...items]);
      return true;
    } catch (error) {
      const reasons = error instanceof TransactionCanceledException ? (error.CancellationReasons ?? []) : [];
      if (reasons.some((reason) => reason.Code === 'ConditionalCheckFailed')) return false;
      throw error;
    }
  }

  /**
   * A top-up spread over the poorest shards (at most `TOP_UP_SHARDS`): every shard a transaction touches is one
   * more that a send in progress can cancel it on, so a busy service's top-up does not touch them all; the sends
   * pay from several shards when the one they draw on runs dry. Tried again while sends keep cancelling it.
   */
  async credit(serviceSid: string, line: CreditLine, audit: AuditRecord): Promise<number> {
    const shards = line.reason === 'reconcile' ? 1 : await this.balanceShardsOf(serviceSid);
    const add = (shard: number, units: number): TransactItem => ({
      Update: {
        TableName: this.tableName,
        Key: keys.balanceShard(serviceSid, shard),
        UpdateExpression: 'ADD balance :units',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':units': units },
      },
    });
    for (let attempt = 0; ; attempt++) {
      let balanceWrites: TransactItem[] = [this.serviceExists(serviceSid)];
      if (line.reason !== 'reconcile' && shards === 1) balanceWrites = [add(0, line.amount)];
      else if (line.reason !== 'reconcile') {
        const balances = await readShardBalances(this.client, this.tableName, serviceSid, shards);
        const poorest = balances
          .map((balance, shard) => ({ balance, shard }))
          .sort((x, y) => x.balance - y.balance || x.shard - y.shard)
          .slice(0, TOP_UP_SHARDS)
          .map(({ shard }) => shard);
        balanceWrites = spreadEvenly(line.amount, poorest.length).map((units, i) => add(poorest[i]!, units));
      }
      const keyWrite = line.topUpKey === undefined ? [] : [this.topUpKeyPut(serviceSid, line)];
      try {
        // A credit whose answer was lost stands or not before this answers: an error would have the operator top
        // up again, and the money be credited twice. Its credit line tells.
        await transactSettled(
          this.client,
          {
            TransactItems: [
              ...balanceWrites,
              ...keyWrite,
              this.put(this.creditItem(serviceSid, line)),
              this.put(auditToItem(audit)),
            ],
            // Its own token per attempt: another attempt may draw on other shards (DynamoDB refuses a mismatch).
            ClientRequestToken: `${line.auditId.split('#').pop()}-${attempt}`,
          },
          () => this.exists(keys.credit(serviceSid, line.auditId), true),
        );
        break;
      } catch (error) {
        const reasons =
          error instanceof TransactionCanceledException ? (error.CancellationReasons ?? []) : [];
        // The key's own write refused: an earlier top-up with it stands (this one made nothing).
        if (keyWrite.length > 0 && reasons[balanceWrites.length]?.Code === 'ConditionalCheckFailed')
          throw new TopUpKeyUsed(await this.topUpKeyAmount(serviceSid, line.topUpKey!));
        const conflict = reasons.some((reason) => reason.Code === 'TransactionConflict');
        if (!conflict || attempt + 1 >= CREDIT_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt));
      }
    }
    // A transaction returns no values: the balance after, read at once (later sends may already have spent).
    // The credit stands now: a failed read must not answer as a failed top-up (the operator would top up
    // again), so it is tried again before it does.
    for (let read = 1; ; read++) {
      try {
        return (await this.getService(serviceSid))!.balance;
      } catch (error) {
        if (read >= BALANCE_READS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** read));
      }
    }
  }

  async setBalanceShards(serviceSid: string, shards: number, audit: AuditRecord): Promise<void> {
    // Every shard is written on the condition that it holds what was read: a send in between cancels the
    // write, which then reads again.
    for (let attempt = 0; ; attempt++) {
      const current = await this.balanceShardsOf(serviceSid);
      if (shards <= current) throw new Error(`the balance is already spread over ${current} shards`);
      const before = await readShardBalances(this.client, this.tableName, serviceSid, current);
      const after = spreadEvenly(
        before.reduce((sum, balance) => sum + balance, 0),
        shards,
      );
      const shardWrite = (shard: number): TransactItem => {
        const key = keys.balanceShard(serviceSid, shard);
        if (shard >= current)
          return this.put(
            { ...key, type: 'balance_shard', service_sid: serviceSid, shard, balance: after[shard] },
            'attribute_not_exists(pk)',
          );
        return {
          Update: {
            TableName: this.tableName,
            Key: key,
            UpdateExpression: `SET balance = :after${shard === 0 ? ', balance_shards = :shards' : ''}`,
            ConditionExpression: `balance = :before${
              shard === 0
                ? current === 1
                  ? ' AND attribute_not_exists(balance_shards)'
                  : ' AND balance_shards = :current'
                : ''
            }`,
            ExpressionAttributeValues: {
              ':after': after[shard],
              ':before': before[shard],
              ...(shard === 0 && { ':shards': shards }),
              ...(shard === 0 && current > 1 && { ':current': current }),
            },
          },
        };
      };
      try {
        await this.transact([
          ...Array.from({ length: shards }, (_, shard) => shardWrite(shard)),
          {
            Update: {
              TableName: this.tableName,
              Key: keys.serviceDirectory(serviceSid),
              // The sweeper finds each shard's ledger from the directory.
              UpdateExpression: 'SET ledger_shards = :shards',
              ExpressionAttributeValues: { ':shards': shards },
            },
          },
          this.put(auditToItem(audit)),
        ]);
        return;
      } catch (error) {
        if (attempt >= SPREAD_ATTEMPTS - 1 || !(error instanceof TransactionCanceledException)) throw error;
      }
    }
  }

  async putTemplate(
    serviceSid: string,
    template: Template,
    audit: AuditRecord,
    count: ItemCount & { limit: number },
  ): Promise<boolean> {
    return this.countChange(serviceSid, 'template_count', count, 1, [
      this.put(templateToItem(serviceSid, template), 'attribute_not_exists(pk)'),
      this.put(auditToItem(audit)),
    ]);
  }

  async getTemplate(serviceSid: string, templateSid: string): Promise<Template | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.template(serviceSid, templateSid) }),
    );
    return Item && templateFromItem(Item);
  }

  async listTemplates(serviceSid: string): Promise<Template[]> {
    return (await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.template)).map(templateFromItem);
  }

  async deleteTemplate(
    serviceSid: string,
    templateSid: string,
    audit: AuditRecord,
    count: ItemCount,
  ): Promise<boolean> {
    return this.countChange(serviceSid, 'template_count', count, -1, [
      {
        Delete: {
          TableName: this.tableName,
          Key: keys.template(serviceSid, templateSid),
          // Deleted once: a second delete must not count it off again.
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
      this.put(auditToItem(audit)),
    ]);
  }

  async updateService(
    serviceSid: string,
    change: ServiceSettingsChange,
    audit: AuditRecord | readonly AuditRecord[],
    expected?: ExpectedSettings,
  ): Promise<void> {
    const { expression, names, values } = settingsUpdate(change);
    const conditions = ['attribute_exists(pk)'];
    if (expected && 'guardCaps' in expected) {
      // A map compares equal to a map of the same entries, in any order.
      if (expected.guardCaps === undefined) conditions.push('attribute_not_exists(guard_caps)');
      else {
        conditions.push('guard_caps = :expected_guard_caps');
        values[':expected_guard_caps'] = expected.guardCaps;
      }
    }
    const version = (attribute: string, value: number | undefined) => {
      if (value === undefined) return;
      // 0: never changed, so the item has no version yet.
      if (value === 0) conditions.push(`attribute_not_exists(${attribute})`);
      else {
        conditions.push(`${attribute} = :expected_${attribute}`);
        values[`:expected_${attribute}`] = value;
      }
    };
    version('rules_version', expected?.rulesVersion);
    version('guard_version', expected?.guardVersion);
    version('channels_version', expected?.channelsVersion);
    try {
      await this.transact([
        {
          Update: {
            TableName: this.tableName,
            Key: keys.service(serviceSid),
            UpdateExpression: expression,
            ConditionExpression: conditions.join(' AND '),
            ...(Object.keys(values).length > 0 && { ExpressionAttributeValues: values }),
            ...(Object.keys(names).length > 0 && { ExpressionAttributeNames: names }),
            ...(expected && { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const }),
          },
        },
        ...[audit].flat().map((record) => this.put(auditToItem(record))),
      ]);
    } catch (error) {
      const reason =
        error instanceof TransactionCanceledException ? error.CancellationReasons?.[0] : undefined;
      // The service is there (it has an item), so the expected value is what failed.
      if (expected && reason?.Code === 'ConditionalCheckFailed' && reason.Item) throw new SettingsChanged();
      throw error;
    }
  }

  /** Every shard's ledger, in time order. */
  async listCharges(serviceSid: string): Promise<ChargeLine[]> {
    const shards = await this.balanceShardsOf(serviceSid);
    const lines = await Promise.all(
      Array.from({ length: shards }, (_, shard) =>
        queryAll(this.client, {
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: {
            ':pk': keys.ledgerPartition(serviceSid, shard),
            ':prefix': SERVICE_CHILD_PREFIX.charge,
          },
          ConsistentRead: true,
        }),
      ),
    );
    const sorted = lines.flat().sort((a, b) => ((a.sk as string) < (b.sk as string) ? -1 : 1));
    return sorted.map((item) => ({
      at: item.at as string,
      verificationSid: item.verification_sid as string,
      amount: item.amount as number,
    }));
  }

  async listCredits(serviceSid: string): Promise<CreditLine[]> {
    return (await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.credit)).map((item) => ({
      at: item.at as string,
      amount: item.amount as number,
      reason: item.reason as CreditLine['reason'],
      auditId: item.audit_id as string,
    }));
  }

  /**
   * One item under the user (signing in lists the user's services with one query) and one under the service
   * (`member list` needs one query), in one transaction that also requires the service to exist. Adding an
   * existing member again updates its label.
   */
  async putMember(membership: Membership, audit: AuditRecord): Promise<void> {
    const fields = {
      type: 'member',
      user_id: membership.userId,
      service_sid: membership.serviceSid,
      service_name: membership.serviceName,
      ...(membership.label && { label: membership.label }),
      added_at: membership.addedAt,
    };
    await this.transact([
      this.serviceExists(membership.serviceSid),
      this.put({ ...keys.member(membership.userId, membership.serviceSid), ...fields }),
      this.put({ ...keys.serviceMember(membership.serviceSid, membership.userId), ...fields }),
      this.put(auditToItem(audit)),
    ]);
  }

  async deleteMember(serviceSid: string, userId: string, audit: AuditRecord): Promise<boolean> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.serviceMember(serviceSid, userId) }),
    );
    if (!Item) return false;
    await this.transact([
      { Delete: { TableName: this.tableName, Key: keys.member(userId, serviceSid) } },
      { Delete: { TableName: this.tableName, Key: keys.serviceMember(serviceSid, userId) } },
      this.put(auditToItem(audit)),
    ]);
    return true;
  }

  async listMembers(serviceSid: string): Promise<Membership[]> {
    return (await this.queryChildren(serviceSid, SERVICE_CHILD_PREFIX.member)).map(membershipFromItem);
  }

  async membershipsOf(userId: string): Promise<Membership[]> {
    return (await this.queryPartition(keys.member(userId, '').pk)).map(membershipFromItem);
  }

  // Strongly consistent: a member or operator removed is refused from the next console request (docs/console.md),
  // not after the replicas catch up. Half a read unit more, on the console's requests only.
  async isMember(userId: string, serviceSid: string): Promise<boolean> {
    return this.exists(keys.member(userId, serviceSid), true);
  }

  async isOperator(userId: string): Promise<boolean> {
    return this.exists(keys.operator(userId), true);
  }

  async setOperator(userId: string, operator: boolean, audit: AuditRecord): Promise<void> {
    await this.transact([
      operator
        ? this.put({ ...keys.operator(userId), type: 'operator', user_id: userId, added_at: audit.at })
        : { Delete: { TableName: this.tableName, Key: keys.operator(userId) } },
      this.put(auditToItem(audit)),
    ]);
  }

  async listOperators(): Promise<string[]> {
    const { pk, sk } = keys.operator('');
    return (
      await queryAll(this.client, {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
        ExpressionAttributeValues: { ':pk': pk, ':sk': sk },
        ConsistentRead: true,
      })
    ).map((item) => item.user_id as string);
  }

  /** Every service `createService` made (its directory entry): the operator's list, without a Scan. */
  async listAllServices(): Promise<DirectoryEntry[]> {
    return (await this.queryPartition(keys.serviceDirectory('').pk)).map((item) => ({
      serviceSid: item.service_sid as string,
      name: item.name as string,
      createdAt: item.created_at as string,
    }));
  }

  async putAudit(audit: AuditRecord): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: auditToItem(audit) }));
  }

  async listAudit(serviceSid: string, limit: number): Promise<AuditRecord[]> {
    const { pk, sk } = keys.audit(serviceSid, '');
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
          ExpressionAttributeValues: { ':pk': pk, ':sk': sk },
          ScanIndexForward: false,
          Limit: limit - items.length,
          ExclusiveStartKey: start,
        }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start && items.length < limit);
    return items.map(auditFromItem);
  }

  private creditItem(serviceSid: string, line: CreditLine): Record<string, unknown> {
    return {
      ...keys.credit(serviceSid, line.auditId),
      type: 'credit',
      at: line.at,
      amount: line.amount,
      reason: line.reason,
      audit_id: line.auditId,
    };
  }

  /** A top-up's key, kept `TOP_UP_KEY_HOURS` (an expired one TTL has not removed yet counts as gone). */
  private topUpKeyPut(serviceSid: string, line: CreditLine): TransactItem {
    const now = Math.floor(Date.parse(line.at) / 1000);
    return {
      Put: {
        TableName: this.tableName,
        Item: {
          ...keys.topUpKey(serviceSid, line.topUpKey!),
          type: 'topup_key',
          amount: line.amount,
          audit_id: line.auditId,
          ttl: now + TOP_UP_KEY_HOURS * 3600,
        },
        ConditionExpression: 'attribute_not_exists(pk) OR #ttl <= :now',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':now': now },
      },
    };
  }

  private async topUpKeyAmount(serviceSid: string, key: string): Promise<number> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.topUpKey(serviceSid, key),
        ConsistentRead: true,
      }),
    );
    return Number(Item?.amount ?? 0);
  }

  private put(item: Record<string, unknown>, condition?: string): TransactItem {
    return {
      Put: { TableName: this.tableName, Item: item, ...(condition && { ConditionExpression: condition }) },
    };
  }

  /** How many shards the service's balance is spread over (1 for a service that does not exist). */
  private async balanceShardsOf(serviceSid: string): Promise<number> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.service(serviceSid),
        ProjectionExpression: 'balance_shards',
        ConsistentRead: true,
      }),
    );
    return typeof Item?.balance_shards === 'number' ? Item.balance_shards : 1;
  }

  private serviceExists(serviceSid: string): TransactItem {
    return {
      ConditionCheck: {
        TableName: this.tableName,
        Key: keys.service(serviceSid),
        ConditionExpression: 'attribute_exists(pk)',
      },
    };
  }

  private async transact(items: TransactItem[]): Promise<void> {
    await this.client.send(new TransactWriteCommand({ TransactItems: items }));
  }

  private async exists(key: ItemKey, consistent = false): Promise<boolean> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: key,
        ProjectionExpression: 'pk',
        ...(consistent && { ConsistentRead: true }),
      }),
    );
    return Item !== undefined;
  }

  private queryPartition(pk: string): Promise<Record<string, unknown>[]> {
    return queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    });
  }

  private queryChildren(serviceSid: string, prefix: string): Promise<Record<string, unknown>[]> {
    return queryServiceChildren(this.client, this.tableName, serviceSid, prefix, true);
  }
}
