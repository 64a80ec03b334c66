/** The verification port on the table: the send's reads and its accepting transaction, checks and expiry. */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { NumberRecord, Verification } from '../../core/model';
import type {
  AcceptResult,
  AcceptSend,
  CheckWrite,
  RecordRefusal,
  SendContext,
  SendContextQuery,
  VerificationStore,
} from '../../core/ports';
import {
  IDEMPOTENCY_RETENTION_SECONDS,
  guardDecisionToItem,
  numberFromItem,
  numberTtl,
  serviceFromItem,
  templateFromItem,
  ttlAfter,
  verificationFromItem,
  verificationToItem,
} from './items';
import { keys, type ItemKey } from './keys';
import { guardViewFromItems, guardViewKeys } from './guard';
import { planDraws, readShardBalances, shardOf, type Draw } from './balance-shards';
import {
  NoTimeToSettle,
  batchGetAll,
  markedUpdate,
  transactSettled,
  updateIfConditionHolds,
} from './requests';
import { NOT_GUESSED, VERIFICATION_ATTR, attr, statusWrite } from './status-write';

/**
 * The idempotency item, unless it is past its `ttl`: TTL may take days to remove it, and a key is remembered 24
 * hours (docs/api.md), as a top-up's key is.
 */
const remembered = (item: Record<string, unknown> | undefined, now: Date) =>
  item && !(typeof item.ttl === 'number' && item.ttl <= Math.floor(now.getTime() / 1000)) ? item : undefined;

/** The number log's attribute naming the refusal that wrote it last (`recordRefusedSend`). */
const NUMBER_LAST_WRITE = 'last_write';
/** Transactions paying from several shards, one after another, while other sends keep changing the shards. */
const MAX_SHARD_DRAWS = 3;

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * A verification by SID, strongly consistent: a replay, a fetch or the first delivery task can come milliseconds
 * after the accepting transaction, and an eventually consistent read may not see the item yet (a replay would
 * answer 500, a fetch 404, and the delivery task would end without sending).
 */
export async function getVerification(
  client: DynamoDBDocumentClient,
  tableName: string,
  sid: string,
): Promise<Verification | undefined> {
  const { Item } = await client.send(
    new GetCommand({ TableName: tableName, Key: keys.verification(sid), ConsistentRead: true }),
  );
  return Item && verificationFromItem(Item);
}

/** One round trip per method unless noted. */
export class DynamoVerificationStore implements VerificationStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  getVerification(sid: string): Promise<Verification | undefined> {
    return getVerification(this.client, this.tableName, sid);
  }

  async getNumber(e164: string): Promise<NumberRecord> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.number(e164), ConsistentRead: true }),
    );
    return numberFromItem(e164, Item);
  }

  async loadSendContext(query: SendContextQuery): Promise<SendContext> {
    const wanted = {
      service: keys.service(query.serviceSid),
      number: keys.number(query.e164),
      ...(query.templateSid && { template: keys.template(query.serviceSid, query.templateSid) }),
      ...(query.idempotencyKey && { idempotency: keys.idempotency(query.serviceSid, query.idempotencyKey) }),
    };
    // The pumping guard's state for the number's country rides in the same request (no extra round trip), and
    // so do the verifications a refusal's read asks for (the service's last sends to the number).
    const guardKeys = query.country ? guardViewKeys(query.serviceSid, query.country) : [];
    const previousKeys = (query.verificationSids ?? []).map((sid) => keys.verification(sid));
    const items = await batchGetAll(
      this.client,
      this.tableName,
      [...Object.values(wanted), ...guardKeys, ...previousKeys],
      query.latest === true,
    );
    const find = (key: ItemKey | undefined) =>
      key && items.find((item) => item.pk === key.pk && item.sk === key.sk);
    const serviceItem = find(wanted.service);
    const service = serviceItem && serviceFromItem(serviceItem);
    const template = find(wanted.template);
    const idempotency = remembered(find(wanted.idempotency), query.now);
    return {
      ...(service && { service }),
      ...(service?.balanceShards !== undefined && { balanceUnread: true as const }),
      ...(template && { template: templateFromItem(template) }),
      ...(idempotency && { idempotentSid: idempotency.verification_sid as string }),
      number: numberFromItem(query.e164, find(wanted.number)),
      ...(query.country && { guard: guardViewFromItems(query.serviceSid, query.country, find) }),
      ...(query.verificationSids && {
        previous: previousKeys.flatMap((key) => {
          const item = find(key);
          return item ? [verificationFromItem(item)] : [];
        }),
      }),
    };
  }

  async getIdempotentSid(serviceSid: string, idempotencyKey: string, now: Date): Promise<string | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.idempotency(serviceSid, idempotencyKey),
        ConsistentRead: true,
      }),
    );
    return remembered(Item, now)?.verification_sid as string | undefined;
  }

  async acceptSend(input: AcceptSend): Promise<AcceptResult> {
    const { verification } = input;
    const shards = input.balanceShards ?? 1;
    const drawn = { shard: shardOf(verification.sid, shards), amount: verification.price };
    // The new verification's SID is unique, so it serves as the transaction's idempotency token.
    const first = await this.accept(input, [drawn], verification.sid);
    if (first.ok || first.reason !== 'insufficient_funds' || shards === 1) return first;
    // The drawn shard cannot pay: the whole balance may. Refused only when every shard together cannot pay.
    for (let attempt = 0; attempt < MAX_SHARD_DRAWS; attempt++) {
      const balances = await readShardBalances(this.client, this.tableName, verification.serviceSid, shards);
      const draws = planDraws(balances, verification.price);
      if (!draws) return first;
      // A token of its own: the first transaction's token names other writes (DynamoDB refuses the mismatch).
      const result = await this.accept(input, draws, `${verification.sid}d${attempt}`);
      if (result.ok || result.reason !== 'insufficient_funds') return result;
    }
    // The shards kept changing under it: decide again with a new SID.
    return { ok: false, reason: 'balance_busy' };
  }

  /**
   * The accepting transaction: the price taken from the shards in `draws`, the verification, its charge line (in
   * the first shard's ledger), the number's log, and the Idempotency-Key. Resent with `token` while its answer is
   * unclear.
   */
  private async accept(input: AcceptSend, draws: Draw[], token: string): Promise<AcceptResult> {
    const { verification, now } = input;
    const serviceSid = verification.serviceSid;
    const items: { role: 'balance' | 'idempotency' | 'number' | 'other'; item: TransactItem }[] = [
      ...draws.map(({ shard, amount }) => ({
        role: 'balance' as const,
        item: {
          Update: {
            TableName: this.tableName,
            Key: keys.balanceShard(serviceSid, shard),
            UpdateExpression: 'SET balance = balance - :price',
            ConditionExpression: 'attribute_exists(pk) AND balance >= :price',
            ExpressionAttributeValues: { ':price': amount },
          },
        },
      })),
      {
        role: 'other',
        item: {
          Put: {
            TableName: this.tableName,
            Item: verificationToItem(verification),
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      },
      {
        role: 'other',
        item: {
          Put: {
            TableName: this.tableName,
            Item: {
              ...keys.charge(serviceSid, now, verification.sid, draws[0]?.shard ?? 0),
              type: 'charge',
              verification_sid: verification.sid,
              amount: verification.price,
              at: now.toISOString(),
              // A price paid from several shards names them: the ledger of each shard stays explainable.
              ...(draws.length > 1 && {
                draws: Object.fromEntries(draws.map(({ shard, amount }) => [String(shard), amount])),
              }),
            },
          },
        },
      },
      {
        role: 'number',
        item: { Update: this.numberLogUpdate(input.number, input.numberSends, now, input.numberRecent) },
      },
    ];
    if (input.idempotencyKey) {
      items.push({
        role: 'idempotency',
        item: {
          Put: {
            TableName: this.tableName,
            Item: {
              ...keys.idempotency(serviceSid, input.idempotencyKey),
              type: 'idempotency',
              verification_sid: verification.sid,
              ttl: ttlAfter(now, IDEMPOTENCY_RETENTION_SECONDS),
            },
            // A key past its 24 hours is taken anew, though TTL has not removed its item yet.
            ConditionExpression: 'attribute_not_exists(pk) OR #ttl <= :now',
            ExpressionAttributeNames: { '#ttl': 'ttl' },
            ExpressionAttributeValues: { ':now': ttlAfter(now, 0) },
          },
        },
      });
    }
    // The charge may stand behind a lost answer, and answering 5xx would then charge a send the caller was told
    // failed (billing rule 2): settled by the same transaction sent again, and the verification, which exists
    // exactly when the charge stands.
    try {
      await transactSettled(
        this.client,
        { TransactItems: items.map(({ item }) => item), ClientRequestToken: token },
        async () => (await this.getVerification(verification.sid)) !== undefined,
        input.timeLeftMs,
      );
      return { ok: true };
    } catch (error) {
      if (error instanceof NoTimeToSettle) return { ok: false, reason: 'no_time' };
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      const failed = (role: string, code = 'ConditionalCheckFailed') =>
        items.some((entry, i) => entry.role === role && reasons[i]?.Code === code);
      if (failed('idempotency')) return { ok: false, reason: 'idempotency_key_taken' };
      if (failed('number')) return { ok: false, reason: 'conflict' };
      if (failed('balance')) return { ok: false, reason: 'insufficient_funds' };
      // TransactionConflict on the balance shards alone: nothing read changed.
      const busy = items.every(
        (entry, i) => entry.role === 'balance' || ['None', undefined].includes(reasons[i]?.Code),
      );
      if (busy && failed('balance', 'TransactionConflict')) return { ok: false, reason: 'balance_busy' };
      // TransactionConflict elsewhere: another transaction held one of these items; deciding again is safe.
      return { ok: false, reason: 'conflict' };
    }
  }

  async recordRefusedSend(input: RecordRefusal): Promise<boolean> {
    const update = this.numberLogUpdate(input.number, input.numberSends, input.now);
    // The guard's refusal goes in the same write: the table's stream carries it to the guard's consumer.
    const guard = input.guard && guardDecisionToItem(input.guard);
    // Marked: a record the SDK re-sent after a lost answer, refused as the version moved, still stands (read as
    // another send's, the send would be decided again and its refusal counted twice).
    const { applied } = await markedUpdate(
      this.client,
      this.tableName,
      {
        ...update,
        ...(guard && {
          UpdateExpression: `${update.UpdateExpression}, guard = :guard`,
          ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':guard': guard },
        }),
      },
      NUMBER_LAST_WRITE,
    );
    return applied;
  }

  /** Replaces the number's send log if nobody changed it since it was read (optimistic version check). */
  /** `recent`: the number's `recent` after an accepted send (absent: left as it is). */
  private numberLogUpdate(number: NumberRecord, sends: number[], now: Date, recent?: NumberRecord['recent']) {
    return {
      TableName: this.tableName,
      Key: keys.number(number.e164),
      UpdateExpression: `SET sends = :sends, version = :next, #ttl = :ttl${recent ? ', recent = :recent' : ''}`,
      ConditionExpression: number.version === 0 ? 'attribute_not_exists(version)' : 'version = :seen',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':sends': sends,
        ':next': number.version + 1,
        ':ttl': numberTtl(now, number.rejectedUntil, recent ?? number.recent),
        ...(recent && { ':recent': recent }),
        ...(number.version !== 0 && { ':seen': number.version }),
      },
    };
  }

  async spendAttempt(sid: string, serviceSid: string, guessHash: string, now: Date): Promise<CheckWrite> {
    // Marked: a check the SDK re-sent after a lost answer neither spends a second attempt nor reads as an earlier
    // check (409 for the right code).
    return this.conditionalVerificationUpdate(
      {
        Key: keys.verification(sid),
        // The guess is written, never compared, here: the condition holds no guess, so a refused write has
        // compared nothing. It changes no status as written, but a right guess or the last wrong one settles the
        // code (`settledStatus`), and the write cannot know which: every check is a status write, marked as a
        // possible event; the events function keeps only the changes of the settled status.
        ...statusWrite({
          set: { lastGuess: guessHash },
          decrement: ['attemptsRemaining'],
          condition: `${attr('serviceSid')} = :service AND ${attr('status')} = :pending AND ${attr('expiresAt')} > :now AND ${attr('attemptsRemaining')} > :zero AND attribute_exists(${attr('codeHash')}) AND ${NOT_GUESSED}`,
          values: { ':pending': 'PENDING', ':zero': 0, ':service': serviceSid },
          now,
        }),
      },
      VERIFICATION_ATTR.lastCheck,
    );
  }

  async markExpired(sid: string, now: Date): Promise<void> {
    // Refused when a check or the expiry timer wrote it back first, or when the code was verified or locked.
    await updateIfConditionHolds(this.client, this.tableName, {
      Key: keys.verification(sid),
      ...statusWrite({
        set: { status: 'EXPIRED' },
        condition: `${attr('status')} = :pending AND ${attr('expiresAt')} <= :now AND ${attr('attemptsRemaining')} > :zero AND ${NOT_GUESSED}`,
        values: { ':pending': 'PENDING', ':zero': 0 },
        now,
      }),
    });
  }

  /** `mark`: the attribute the write records its id in (`markedUpdate`). */
  private async conditionalVerificationUpdate(
    update: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName'>,
    mark: string,
  ): Promise<CheckWrite> {
    const { applied, item } = await markedUpdate(
      this.client,
      this.tableName,
      { ...update, ReturnValues: 'ALL_NEW' },
      mark,
    );
    if (applied) return { ok: true, verification: verificationFromItem(item!) };
    return { ok: false, ...(item && { current: verificationFromItem(item) }) };
  }
}
