/**
 * The money audit of the reliability tests, over a scan of the whole table: every verification has exactly
 * one charge line of its price and every charge line has its verification (the accepting transaction wrote
 * both or neither), and each service's balance is its starting balance plus its top-ups less the sum of its
 * charge lines. `proveBalances` asks the accounts core the same of its own ledger (credits − charges).
 */
import { UNITS_PER_USD } from '../../functions/core/money';
import type { DynamoFaults } from './faults';
import { BY_TEST, startHarness, type Account, type ApiResponse, type Harness } from './harness';

type Item = Record<string, unknown>;

/** Money put in (opening balance and top-ups) in units, by service SID, of the services a test created. */
export class Books {
  private readonly paidIn = new Map<string, number>();

  constructor(private readonly harness: Harness) {}

  /** Creates a service with a balance and remembers it. */
  async open(balanceUsd = 100, options: Parameters<Harness['createAccount']>[0] = {}): Promise<Account> {
    const account = await this.harness.createAccount({ ...options, balanceUsd });
    this.paidIn.set(account.serviceSid, Math.round(balanceUsd * UNITS_PER_USD));
    return account;
  }

  /** Tops up through the accounts core, as the console and the admin command do: a credit line with the money. */
  async topUp(account: Account, units: number): Promise<number> {
    const { balance } = await this.harness.accounts.topUp(BY_TEST, account.serviceSid, units);
    this.paidIn.set(account.serviceSid, (this.paidIn.get(account.serviceSid) ?? 0) + units);
    return balance;
  }

  /** Records money a test put in through an accounts core of its own (one with faults, say). */
  paid(account: Account, units: number): void {
    this.paidIn.set(account.serviceSid, (this.paidIn.get(account.serviceSid) ?? 0) + units);
  }

  /** The services this book opened. */
  get serviceSids(): string[] {
    return [...this.paidIn.keys()];
  }

  /** Each opened service whose balance the core's ledger does not prove (`balanceAudit`), as readable lines. */
  async proveBalances(): Promise<string[]> {
    const audits = await Promise.all(this.serviceSids.map((sid) => this.harness.accounts.balanceAudit(sid)));
    return audits
      .filter((audit) => audit.difference !== 0)
      .map(
        (audit) =>
          `service ${audit.serviceSid}: balance ${audit.balance}, credits ${audit.credits} - charges ${audit.charges}`,
      );
  }

  /**
   * After sends that raced for a balance worth exactly `worth` of them at `price`: that many accepted, the others
   * refused `insufficient_funds`, the balance 0, and one verification and one charge line of `price` for each
   * accepted send, none for a refused one.
   */
  async expectSpentExactly(account: Account, responses: ApiResponse[], worth: number, price: number) {
    const accepted = responses.filter((r) => r.status === 201).map((r) => r.body.sid as string);
    expect(accepted).toHaveLength(worth);
    const refused = responses.filter((r) => r.status !== 201);
    expect(refused.map((r) => [r.status, r.body.code])).toEqual(
      refused.map(() => [402, 'insufficient_funds']),
    );
    expect((await this.harness.accounts.getService(account.serviceSid))!.balance).toBe(0);
    const { verifications, charges } = ledgerOf(await this.harness.scanTable(), account.serviceSid);
    expect(charges.map((line) => line.verification_sid).sort()).toEqual([...accepted].sort());
    expect(verifications.map((item) => item.sid).sort()).toEqual([...accepted].sort());
    expect(charges.every((line) => line.amount === price)).toBe(true);
  }

  /**
   * After sends racing `topUps` top-ups of `price` each on a balance worth `worth` sends: between `worth` and
   * `worth + topUps` accepted, every other refused `insufficient_funds`, what was not spent still held, and the
   * core's ledger proving it (a credit line for the opening balance and one per top-up). Returns the accepted.
   */
  async expectTopUpsKept(
    account: Account,
    responses: ApiResponse[],
    { worth, topUps, price }: { worth: number; topUps: number; price: number },
  ): Promise<number> {
    const accepted = responses.filter((r) => r.status === 201).length;
    expect(accepted).toBeGreaterThanOrEqual(worth);
    expect(accepted).toBeLessThanOrEqual(worth + topUps);
    const others = responses.filter((r) => r.status !== 201 && r.body.code !== 'insufficient_funds');
    expect(others.map((r) => [r.status, r.body.code, r.body.message])).toEqual([]);
    expect((await this.harness.accounts.getService(account.serviceSid))!.balance).toBe(
      (worth + topUps - accepted) * price,
    );
    expect(await this.harness.accounts.balanceAudit(account.serviceSid)).toMatchObject({
      difference: 0,
      creditLines: 1 + topUps,
      chargeLines: accepted,
    });
    return accepted;
  }

  /** Every breach of the invariants, as readable lines; empty when the books balance. */
  async audit(items?: Item[]): Promise<string[]> {
    return auditBooks(items ?? (await this.harness.scanTable()), this.paidIn);
  }
}

function auditBooks(items: Item[], paidIn: ReadonlyMap<string, number>): string[] {
  const problems: string[] = [];
  const verifications = items.filter((item) => item.type === 'verification');
  const charges = items.filter((item) => item.type === 'charge');
  const chargesBySid = new Map<string, Item[]>();
  for (const charge of charges) {
    const sid = charge.verification_sid as string;
    chargesBySid.set(sid, [...(chargesBySid.get(sid) ?? []), charge]);
  }
  const verificationsBySid = new Map(verifications.map((item) => [item.sid as string, item]));

  for (const verification of verifications) {
    const lines = chargesBySid.get(verification.sid as string) ?? [];
    if (lines.length !== 1) {
      problems.push(`verification ${String(verification.sid)} has ${lines.length} charge lines`);
    } else if (lines[0]!.amount !== verification.price) {
      problems.push(`verification ${String(verification.sid)} charged ${String(lines[0]!.amount)}`);
    } else if (!inLedgerOf(lines[0]!, String(verification.service_sid))) {
      problems.push(`verification ${String(verification.sid)} charged to ${String(lines[0]!.pk)}`);
    }
  }
  for (const charge of charges) {
    if (!verificationsBySid.has(charge.verification_sid as string)) {
      problems.push(`charge ${String(charge.sk)} has no verification`);
    }
  }
  for (const [serviceSid, balance] of paidIn) {
    const service = items.find((item) => item.pk === `SERVICE#${serviceSid}` && item.sk === 'SERVICE');
    const charged = charges
      .filter((charge) => inLedgerOf(charge, serviceSid))
      .reduce((sum, charge) => sum + (charge.amount as number), 0);
    // The service item holds shard 0; a spread balance has one more item per shard.
    const shards = items.filter((item) => item.type === 'balance_shard' && item.service_sid === serviceSid);
    const held = [service, ...shards].reduce((sum, item) => sum + ((item?.balance as number) ?? 0), 0);
    if (!service) problems.push(`service ${serviceSid} is missing`);
    else if (held !== balance - charged) {
      problems.push(`service ${serviceSid}: balance ${held}, expected ${balance} - ${charged}`);
    }
    for (const shard of [service, ...shards]) {
      if (shard && (shard.balance as number) < 0)
        problems.push(`${String(shard.pk)} holds ${String(shard.balance)}`);
    }
    const expectedShards = (service?.balance_shards as number | undefined) ?? 1;
    if (service && shards.length !== expectedShards - 1)
      problems.push(`service ${serviceSid}: ${shards.length + 1} balance shards, expected ${expectedShards}`);
  }
  return problems;
}

/** A charge line in one of the service's ledgers: its own partition, or a balance shard's (`SERVICE#<VA>#<n>`). */
function inLedgerOf(charge: Item, serviceSid: string): boolean {
  const pk = String(charge.pk);
  return pk === `SERVICE#${serviceSid}` || pk.startsWith(`SERVICE#${serviceSid}#`);
}

/** The verifications and charge lines of one service in a scan. */
export function ledgerOf(items: Item[], serviceSid: string): { verifications: Item[]; charges: Item[] } {
  return {
    verifications: items.filter((item) => item.type === 'verification' && item.service_sid === serviceSid),
    charges: items.filter((item) => item.type === 'charge' && inLedgerOf(item, serviceSid)),
  };
}

/**
 * For a test file of money under faults: before its tests, a harness whose DynamoDB clients carry `faults` (the
 * per-key limit out of the way) and its books; after each test, the faults cleared; after them all, the books'
 * audit and the core's proof (every service's shards, charge lines and credit lines add up), then the harness
 * closed. The fields are set once `beforeAll` ran.
 */
export function booksUnderFaults(faults: DynamoFaults): { harness: Harness; books: Books } {
  const setting = {} as { harness: Harness; books: Books };
  beforeAll(async () => {
    setting.harness = await startHarness({
      settings: { keyRequestsPerMinute: 100_000 },
      decorateDynamoClient: faults.install,
    });
    setting.books = new Books(setting.harness);
  });
  afterEach(() => faults.reset());
  afterAll(async () => {
    await setting.harness.stack.workflow.idle();
    expect(await setting.books.audit()).toEqual([]);
    expect(await setting.books.proveBalances()).toEqual([]);
    await setting.harness.close();
  });
  return setting;
}
