import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PARTITION_FAMILY, keys, type ItemKey } from '../../functions/adapters/dynamodb/keys';
import { OPERATORS_AUDIT_SCOPE } from '../../functions/core/accounts/ports';
import { REPO_ROOT } from '../../scripts/check-links';

/**
 * Every item the key builders make lives in one of the PARTITION_FAMILY prefixes, the prefixes the stack's
 * `dynamodb:LeadingKeys` conditions allow. A builder with a prefix of its own would be refused by every role on
 * AWS while passing every local test; this catches it here.
 */
const at = new Date('2026-01-02T03:04:05.678Z');
const tableKeys: Record<string, () => ItemKey> = {
  service: () => keys.service('VA1'),
  template: () => keys.template('VA1', 'HX1'),
  charge: () => keys.charge('VA1', at, 'VE1'),
  shardCharge: () => keys.charge('VA1', at, 'VE1', 3),
  balanceShard: () => keys.balanceShard('VA1', 3),
  ledgerPartition: () => ({ pk: keys.ledgerPartition('VA1', 3), sk: '' }),
  serviceApiKey: () => keys.serviceApiKey('VA1', 'ab'),
  apiKey: () => keys.apiKey('ab'),
  verification: () => keys.verification('VE1'),
  idempotency: () => keys.idempotency('VA1', 'order-1'),
  number: () => keys.number('+14155550100'),
  webhookEndpoint: () => keys.webhookEndpoint('VA1', 'WH1'),
  receiptToken: () => keys.receiptToken('vonage#0e5f3a1c'),
  member: () => keys.member('user-1', 'VA1'),
  serviceMember: () => keys.serviceMember('VA1', 'user-1'),
  serviceDirectory: () => keys.serviceDirectory('VA1'),
  guardCountry: () => keys.guardCountry('VA1', 'GB'),
  guardScope: () => keys.guardScope('GLOBAL'),
  guardCountryStats: () => keys.guardCountryStats('GLOBAL', 'GB'),
  guardScopeStats: () => keys.guardScopeStats('VA1'),
  webhookDelivery: () => keys.webhookDelivery('VA1', at, 'EV1', 'WH1', 1),
  webhookDeliveries: () => ({ ...keys.webhookDeliveries('VA1'), sk: '' }),
  webhookDeliveryRange: () => ({ pk: keys.webhookDeliveryRange('VA1', at, at).pk, sk: '' }),
  chargeRange: () => ({ pk: keys.chargeRange('VA1', at, at).pk, sk: '' }),
  shardChargeRange: () => ({ pk: keys.chargeRange('VA1', at, at, 3).pk, sk: '' }),
  sweepCursor: () => keys.sweepCursor(),
  credit: () => keys.credit('VA1', '2026-01-02T03:04:05.678Z#ab'),
  topUpKey: () => keys.topUpKey('VA1', 'retry-1'),
  audit: () => keys.audit('VA1', '2026-01-02T03:04:05.678Z#ab'),
  operatorsAudit: () => keys.audit(OPERATORS_AUDIT_SCOPE, '2026-01-02T03:04:05.678Z#ab'),
  operator: () => keys.operator('user-1'),
  consoleRequests: () => keys.consoleRequests('user-1', at),
};
test('every table key builder is covered here (a new one must be placed in a family)', () => {
  // chargedSend reads a sort key; it builds none.
  const builders = Object.keys(keys).filter((name) => name !== 'chargedSend');
  expect(builders.filter((name) => !(name in tableKeys))).toEqual([]);
});

test.each(Object.entries(tableKeys))('%s is in a partition family', (_name, build) => {
  const { pk } = build();
  const families = Object.values(PARTITION_FAMILY).filter((prefix) => pk.startsWith(prefix));
  expect(families).toHaveLength(1);
  // The family prefix is followed by the item's own id, never empty.
  expect(pk.length).toBeGreaterThan(families[0]!.length);
});

test('no family prefix is a prefix of another (a LeadingKeys pattern would cover both)', () => {
  const prefixes = Object.values(PARTITION_FAMILY);
  for (const a of prefixes) for (const b of prefixes) if (a !== b) expect(b.startsWith(a)).toBe(false);
});

test("a balance shard's charge lines share its partition; shard 0 is the service's own", () => {
  expect(keys.balanceShard('VA1', 0)).toEqual(keys.service('VA1'));
  expect(keys.charge('VA1', at, 'VE1', 0).pk).toBe(keys.service('VA1').pk);
  expect(keys.charge('VA1', at, 'VE1', 3).pk).toBe(keys.balanceShard('VA1', 3).pk);
  expect(keys.chargeRange('VA1', at, at, 3).pk).toBe(keys.balanceShard('VA1', 3).pk);
  expect(keys.balanceShard('VA1', 3).pk).not.toBe(keys.balanceShard('VA1', 4).pk);
});

/**
 * docs/data-model.md's list of items is what an operator (and a data-protection review) reads to learn what the
 * table holds: an item type missing there is data nobody knows is kept.
 */
const dataModel = readFileSync(join(REPO_ROOT, 'docs/data-model.md'), 'utf8');
const itemsSection = dataModel.slice(dataModel.indexOf('\n## Items and keys\n') + 1);
const documentedItems = itemsSection.slice(0, itemsSection.indexOf('\n## ')).split('\n- ').slice(1);

// Partitions and ranges (an empty sort key) are no item of their own.
test.each(Object.entries(tableKeys).filter(([, build]) => build().sk !== ''))(
  '%s is listed in docs/data-model.md, its partition and sort key in one entry',
  (_name, build) => {
    const { pk, sk } = build();
    const family = Object.values(PARTITION_FAMILY).find((prefix) => pk.startsWith(prefix))!;
    // The sort key's fixed start (`TEMPLATE#`, `NUMBER`); one that starts with a time has none.
    const skStart = /^[A-Z]+(#|$)/.exec(sk)?.[0] ?? '';
    const entries = documentedItems.filter(
      (entry) => entry.includes(`\`${family}`) && entry.includes(`\`${skStart}`),
    );
    expect(entries.length).toBeGreaterThan(0);
  },
);
