/**
 * The static controls on the service item, against DynamoDB Local: the country allow-list (`allowed_countries`:
 * absent, empty and a list read back distinctly) and the RiskCheck permission (`guard_risk_check_opt_out`), read
 * by the send's own BatchGetItem.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient } from '../../functions/adapters/dynamodb/client';
import { serviceFromItem, serviceToItem } from '../../functions/adapters/dynamodb/items';
import { keys } from '../../functions/adapters/dynamodb/keys';
import { defaultAllowedCountries } from '../../functions/core/guard/high-risk-countries';
import { BY_TEST, dynamoEndpoint, startHarness, type Harness } from '../support/harness';

let harness: Harness;
let documents: DynamoDBDocumentClient;
beforeAll(async () => {
  harness = await startHarness();
  documents = createDocumentClient({ endpoint: dynamoEndpoint() });
});
afterAll(async () => {
  documents.destroy();
  await harness.close();
});

const rawItem = async (serviceSid: string) =>
  (
    await documents.send(
      new GetCommand({ TableName: harness.tableName, Key: keys.service(serviceSid), ConsistentRead: true }),
    )
  ).Item!;

describe('the service item', () => {
  it('keeps an absent, an empty and a listed allow-list apart', async () => {
    const { serviceSid } = await harness.createAccount();
    expect((await harness.accounts.getService(serviceSid))?.rules.allowedCountries).toEqual(
      defaultAllowedCountries(),
    );
    await harness.accounts.setRules(BY_TEST, serviceSid, { allowedCountries: [] });
    expect((await rawItem(serviceSid)).allowed_countries).toEqual([]);
    expect((await harness.accounts.getService(serviceSid))?.rules).toEqual({
      blockedCountries: [],
      blockedPrefixes: [],
      allowedCountries: [],
    });
    await harness.accounts.setRules(BY_TEST, serviceSid, { allowedCountries: ['GB', 'FR', 'GB'] });
    expect((await harness.accounts.getService(serviceSid))?.rules.allowedCountries).toEqual(['FR', 'GB']);
    await harness.accounts.setRules(BY_TEST, serviceSid, { allowedCountries: null });
    expect('allowed_countries' in (await rawItem(serviceSid))).toBe(false);
    const service = (await harness.accounts.getService(serviceSid))!;
    expect('allowedCountries' in service.rules).toBe(false);
    // The blocked lists are written without touching it.
    await harness.accounts.setRules(BY_TEST, serviceSid, { allowedCountries: ['GB'] });
    await harness.accounts.setRules(BY_TEST, serviceSid, { blockedCountries: ['US'], blockedPrefixes: [] });
    expect((await harness.accounts.getService(serviceSid))?.rules).toEqual({
      blockedCountries: ['US'],
      blockedPrefixes: [],
      allowedCountries: ['GB'],
    });
  });

  it('maps both ways: absent stays absent, empty stays empty, the permission only when given', () => {
    const base = {
      sid: `VA${'1'.repeat(32)}`,
      name: 'Item',
      balance: 0,
      enabledChannels: [],
      prices: {},
      createdAt: '2026-11-26T00:00:00.000Z',
      webhookEndpoints: [],
    };
    for (const rules of [
      { blockedCountries: [], blockedPrefixes: [] },
      { blockedCountries: [], blockedPrefixes: [], allowedCountries: [] },
      { blockedCountries: ['US'], blockedPrefixes: [], allowedCountries: ['FR', 'GB'] },
    ]) {
      expect(serviceFromItem(serviceToItem({ ...base, rules })).rules).toEqual(rules);
    }
    const rules = { blockedCountries: [], blockedPrefixes: [] };
    const allowed = { level: 'standard' as const, safeList: [], riskCheckOptOut: true };
    expect(serviceFromItem(serviceToItem({ ...base, rules, guard: allowed })).guard).toEqual(allowed);
    expect(serviceToItem({ ...base, rules })).not.toHaveProperty('guard_risk_check_opt_out');
    expect(
      serviceFromItem({ ...serviceToItem({ ...base, rules }), guard_risk_check_opt_out: true }).guard,
    ).toEqual(allowed);
  });

  it('the RiskCheck permission is set and removed on the item, and the send obeys it', async () => {
    const account = await harness.createAccount();
    const api = harness.client(account);
    const personal = '+447011234567';
    expect((await api.send({ To: personal, RiskCheck: 'disable' })).body).toMatchObject({
      code: 'blocked_by_policy',
    });
    await harness.accounts.setRiskCheckOptOut(BY_TEST, account.serviceSid, true);
    expect((await rawItem(account.serviceSid)).guard_risk_check_opt_out).toBe(true);
    expect((await harness.accounts.getService(account.serviceSid))?.guard).toEqual({
      level: 'standard',
      safeList: [],
      riskCheckOptOut: true,
    });
    expect((await api.send({ To: personal, RiskCheck: 'disable' })).body).toMatchObject({
      code: 'no_eligible_channel',
    });
    await harness.accounts.setRiskCheckOptOut(BY_TEST, account.serviceSid, false);
    expect('guard_risk_check_opt_out' in (await rawItem(account.serviceSid))).toBe(false);
    expect((await harness.accounts.getService(account.serviceSid))?.guard).toBeUndefined();
  });
});
