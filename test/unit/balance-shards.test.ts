import { planDraws, shardOf, spreadEvenly } from '../../functions/adapters/dynamodb/balance-shards';

test('a send draws on the shard its SID picks, spread evenly over the shards', () => {
  expect(shardOf('VE0123456789abcdef0123456789abcdef', 1)).toBe(0);
  expect(shardOf('VE000000000000000000000000000000ff', 16)).toBe(0xff % 16);
  const counts = new Array<number>(8).fill(0);
  for (let i = 0; i < 8_000; i++)
    counts[shardOf(`VE${(i * 2_654_435_761).toString(16).padStart(32, '0')}`, 8)]!++;
  for (const n of counts) expect(n).toBeGreaterThan(800);
});

test('a price no one shard can pay is taken from the fullest first; none when the whole cannot pay', () => {
  expect(planDraws([100, 600, 0, 300], 500)).toEqual([{ shard: 1, amount: 500 }]);
  expect(planDraws([300, 200, 250, 0], 500)).toEqual([
    { shard: 0, amount: 300 },
    { shard: 2, amount: 200 },
  ]);
  expect(planDraws([125, 125, 125, 125], 500)).toHaveLength(4);
  expect(planDraws([125, 125, 125, 124], 500)).toBeUndefined();
});

test('a top-up or a new spread is split as evenly as whole units allow, the first shards taking the rest', () => {
  expect(spreadEvenly(1_003, 4)).toEqual([251, 251, 251, 250]);
  expect(spreadEvenly(3, 4)).toEqual([1, 1, 1, 0]);
  expect(spreadEvenly(800, 1)).toEqual([800]);
});
