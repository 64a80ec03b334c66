/**
 * `npx tsx bench/guard/counts.ts`: the counting part of `npm run bench` alone (bench/counts.ts, the same meters on
 * the real clients), printed beside the last full bench run's figures in bench/results.json, to show what the
 * pumping guard's three extra keys in the send's BatchGetItem cost: requests (none) and read units.
 */
import { readFileSync } from 'node:fs';
import { countOperations, type OperationCount } from '../counts';
import { startBenchService } from '../service';
import { NumberSource, createAccount, startBenchDb } from '../setup';

async function main(): Promise<void> {
  const before = (
    JSON.parse(readFileSync('bench/results.json', 'utf8')) as {
      commit?: string;
      counts: { operations: OperationCount[] };
    }
  ).counts.operations;
  const db = await startBenchDb();
  try {
    const service = await startBenchService(db, {
      settings: { channelWaitSeconds: 1, keyRequestsPerMinute: 1_000_000_000 },
      modelCapacity: true,
    });
    try {
      const caller = await createAccount(db, 1_000_000);
      const broke = await createAccount(db, 0);
      const { operations } = await countOperations(service, caller, broke, new NumberSource(), 3);
      console.log(
        '| Operation | Requests before | Requests now | RRU before | RRU now | WRU before | WRU now |',
      );
      console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const now of operations) {
        const was = before.find((op) => op.operation === now.operation)?.withAuth;
        const cell = (value: number | undefined) => (value === undefined ? '-' : String(value));
        console.log(
          `| ${now.operation} | ${cell(was?.requests)} | ${now.withAuth.requests} | ${cell(was?.rru)} | ${now.withAuth.rru} | ${cell(was?.wru)} | ${now.withAuth.wru} |`,
        );
      }
    } finally {
      await service.close();
    }
  } finally {
    await db.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
