import { TransactionCanceledException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { DeliveryAttempt, NumberRecord, Verification } from '../../core/model';
import type {
  AcceptResult,
  AcceptedSend,
  AnsweredAttempts,
  AcceptSend,
  ApiKeyStore,
  CheckWrite,
  DeliveryStore,
  KeyRequest,
  KeyRequestOutcome,
  DeliverySweepStore,
  RecordRefusal,
  SendContext,
  SendContextQuery,
  SweepCursor,
  TimeSpan,
  VerificationStore,
} from '../../core/ports';
import type { Channel } from '../../core/routing';
import { RECEIPT_FAILED_ATTRIBUTE } from '../../core/delivery-time';
import {
  IDEMPOTENCY_RETENTION_SECONDS,
  guardDecisionToItem,
  numberFromItem,
  numberTtl,
  rejectedAttribute,
  serviceFromItem,
  templateFromItem,
  ttlAfter,
  verificationFromItem,
  verificationToItem,
} from './items';
import { keys, type ItemKey } from './keys';
import { guardViewFromItems, guardViewKeys } from './guard';
import { isConditionFailure, queryAll } from './requests';
import {
  NOT_GUESSED,
  VERIFICATION_ATTR,
  attr,
  deliveriesEntries,
  statusWrite,
  type VerificationAttr,
} from './status-write';

/** The key exists, is not revoked and belongs to the service in the path (`:service`). */
const KEY_USABLE = 'attribute_exists(pk) AND attribute_not_exists(revoked_at) AND service_sid = :service';

/**
 * The per-key limit's counts: a map on the key's item, one entry per one-minute window, named by the window's
 * start in epoch minutes.
 */
const RATE_COUNTS = 'rate_counts';
const MINUTE_MS = 60_000;
const rateWindowName = (window: number): string => String(Math.floor(window / MINUTE_MS));
/** Entries with a name that is not a window (none are written) are left alone. */
const windowsOf = (image: Record<string, unknown> | undefined): number[] =>
  Object.keys((image?.[RATE_COUNTS] as Record<string, unknown> | undefined) ?? {})
    .filter((name) => /^\d+$/.test(name))
    .map((name) => Number(name) * MINUTE_MS);
/**
 * A window older than the one before `current`: no request counts in it any more. The one before is kept for
 * instances whose clocks are slightly behind at a minute's edge, and later ones for those ahead.
 */
const isStaleWindow = (window: number, current: number): boolean => window < current - MINUTE_MS;
/** Stale windows an item may show before a write removes them at once instead of at the instance's next write. */
const STALE_WINDOWS_BOUND = 8;
/** API keys whose windows one instance remembers. */
const REMEMBERED_KEYS = 10_000;
/** DynamoDB's answer to a SET of a map entry when the map itself is missing. */
const isMissingMap = (error: unknown): boolean =>
  error instanceof Error &&
  error.name === 'ValidationException' &&
  error.message.includes('document path provided in the update expression is invalid');

/** Ending delivery drops the code kept for it. */
const DELIVERY_ENDED_REMOVES = ['sealedCode'] satisfies VerificationAttr[];

/** Ledger queries (a service's charge lines in one span) the sweeper makes at once. */
const LEDGER_QUERIES_AT_ONCE = 16;
/** BatchGetItem's limit of keys per request. */
const BATCH_GET_KEYS = 100;

/** Re-sends of the accepting transaction, with its token, when its answer was not clear. */
const MAX_TRANSACTION_RESENDS = 2;

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * The failed item's old image, which DynamoDB returns with `ReturnValuesOnConditionCheckFailure`. The
 * document client does not unmarshall errors, so it arrives as raw attribute values.
 */
const oldImage = (error: unknown): Record<string, unknown> | undefined => {
  const item = (error as { Item?: Record<string, AttributeValue> }).Item;
  return item && unmarshall(item);
};

/** The single-table adapter behind every storage port. One round trip per method unless noted. */
export class DynamoStore implements VerificationStore, ApiKeyStore, DeliveryStore, DeliverySweepStore {
  /**
   * Per API key, the windows of the per-key limit its item was last seen to hold (from the images the key's
   * writes return): this instance's next write of the key removes the stale ones, so nothing else is written.
   */
  private readonly keyWindows = new Map<string, number[]>();

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async getVerification(sid: string): Promise<Verification | undefined> {
    const { Item } = await this.client.send(
      // Strongly consistent: a replay, a fetch or the first delivery task can come milliseconds after the
      // accepting transaction, and an eventually consistent read may not see the item yet (a replay would
      // answer 500, a fetch 404, and the delivery task would end without sending).
      new GetCommand({ TableName: this.tableName, Key: keys.verification(sid), ConsistentRead: true }),
    );
    return Item && verificationFromItem(Item);
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
    // The pumping guard's state for the number's country rides in the same request (no extra round trip).
    const guardKeys = query.country ? guardViewKeys(query.serviceSid, query.country) : [];
    const items = await this.batchGet([...Object.values(wanted), ...guardKeys], query.latest === true);
    const find = (key: ItemKey | undefined) =>
      key && items.find((item) => item.pk === key.pk && item.sk === key.sk);
    const service = find(wanted.service);
    const template = find(wanted.template);
    const idempotency = find(wanted.idempotency);
    return {
      ...(service && { service: serviceFromItem(service) }),
      ...(template && { template: templateFromItem(template) }),
      ...(idempotency && { idempotentSid: idempotency.verification_sid as string }),
      number: numberFromItem(query.e164, find(wanted.number)),
      ...(query.country && { guard: guardViewFromItems(query.serviceSid, query.country, find) }),
    };
  }

  async getIdempotentSid(serviceSid: string, idempotencyKey: string): Promise<string | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keys.idempotency(serviceSid, idempotencyKey),
        ConsistentRead: true,
      }),
    );
    return Item?.verification_sid as string | undefined;
  }

  async acceptSend(input: AcceptSend): Promise<AcceptResult> {
    const { verification, now } = input;
    const items: { role: 'service' | 'idempotency' | 'number' | 'other'; item: TransactItem }[] = [
      {
        role: 'service',
        item: {
          Update: {
            TableName: this.tableName,
            Key: keys.service(verification.serviceSid),
            UpdateExpression: 'SET balance = balance - :price',
            ConditionExpression: 'attribute_exists(pk) AND balance >= :price',
            ExpressionAttributeValues: { ':price': verification.price },
          },
        },
      },
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
              ...keys.charge(verification.serviceSid, now, verification.sid),
              type: 'charge',
              verification_sid: verification.sid,
              amount: verification.price,
              at: now.toISOString(),
            },
          },
        },
      },
      { role: 'number', item: { Update: this.numberLogUpdate(input.number, input.numberSends, now) } },
    ];
    if (input.idempotencyKey) {
      items.push({
        role: 'idempotency',
        item: {
          Put: {
            TableName: this.tableName,
            Item: {
              ...keys.idempotency(verification.serviceSid, input.idempotencyKey),
              type: 'idempotency',
              verification_sid: verification.sid,
              ttl: ttlAfter(now, IDEMPOTENCY_RETENTION_SECONDS),
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      });
    }
    // The new verification's SID is unique, so it serves as the transaction's idempotency token: DynamoDB
    // applies a transaction repeated with the same token once (within 10 minutes); the SDK's retries reuse it.
    const transaction = () =>
      new TransactWriteCommand({
        TransactItems: items.map(({ item }) => item),
        ClientRequestToken: verification.sid,
      });
    try {
      for (let resend = 0; ; resend++) {
        try {
          await this.client.send(transaction());
          return { ok: true };
        } catch (error) {
          if (error instanceof TransactionCanceledException) throw error;
          // No clear answer (a time-out, InternalServerError, throttling after the SDK's retries, or
          // TransactionInProgressException: the first send is still being applied). The charge may stand, and
          // answering 5xx would then charge a send the caller was told failed (billing rule 2). Settle it by
          // sending the same transaction again: applied before, it succeeds without applying it twice; not
          // applied, it is applied now or cancelled for the reasons read below.
          if (resend < MAX_TRANSACTION_RESENDS) {
            await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** resend));
            continue;
          }
          // Still no answer: the verification exists exactly when the charge stands (same transaction).
          if (await this.getVerification(verification.sid)) return { ok: true };
          throw error;
        }
      }
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const failed = (role: string) =>
        items.some(
          (entry, i) =>
            entry.role === role && error.CancellationReasons?.[i]?.Code === 'ConditionalCheckFailed',
        );
      if (failed('idempotency')) return { ok: false, reason: 'idempotency_key_taken' };
      if (failed('number')) return { ok: false, reason: 'conflict' };
      if (failed('service')) return { ok: false, reason: 'insufficient_funds' };
      // TransactionConflict: another transaction held one of these items; deciding again is safe.
      return { ok: false, reason: 'conflict' };
    }
  }

  async recordRefusedSend(input: RecordRefusal): Promise<boolean> {
    const update = this.numberLogUpdate(input.number, input.numberSends, input.now);
    if (!input.guard) return this.updateIfConditionHolds(update);
    // The guard's refusal goes in the same write: the table's stream carries it to the guard's consumer.
    return this.updateIfConditionHolds({
      ...update,
      UpdateExpression: `${update.UpdateExpression}, guard = :guard`,
      ExpressionAttributeValues: {
        ...update.ExpressionAttributeValues,
        ':guard': guardDecisionToItem(input.guard),
      },
    });
  }

  /** Replaces the number's send log if nobody changed it since it was read (optimistic version check). */
  private numberLogUpdate(number: NumberRecord, sends: number[], now: Date) {
    return {
      TableName: this.tableName,
      Key: keys.number(number.e164),
      UpdateExpression: 'SET sends = :sends, version = :next, #ttl = :ttl',
      ConditionExpression: number.version === 0 ? 'attribute_not_exists(version)' : 'version = :seen',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':sends': sends,
        ':next': number.version + 1,
        ':ttl': numberTtl(now, number.rejectedUntil),
        ...(number.version !== 0 && { ':seen': number.version }),
      },
    };
  }

  async spendAttempt(sid: string, serviceSid: string, guessHash: string, now: Date): Promise<CheckWrite> {
    return this.conditionalVerificationUpdate({
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
    });
  }

  async markExpired(sid: string, now: Date): Promise<void> {
    // Refused when a check or the expiry timer wrote it back first, or when the code was verified or locked.
    await this.updateIfConditionHolds({
      Key: keys.verification(sid),
      ...statusWrite({
        set: { status: 'EXPIRED' },
        condition: `${attr('status')} = :pending AND ${attr('expiresAt')} <= :now AND ${attr('attemptsRemaining')} > :zero AND ${NOT_GUESSED}`,
        values: { ':pending': 'PENDING', ':zero': 0 },
        now,
      }),
    });
  }

  /** An UpdateItem whose failed condition is an answer, not an error: false when the condition did not hold. */
  private async updateIfConditionHolds(update: Omit<UpdateCommandInput, 'TableName'>): Promise<boolean> {
    try {
      await this.client.send(new UpdateCommand({ ...update, TableName: this.tableName }));
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  private async conditionalVerificationUpdate(
    update: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName'>,
  ): Promise<CheckWrite> {
    try {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          ...update,
          TableName: this.tableName,
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { ok: true, verification: verificationFromItem(Attributes!) };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const old = oldImage(error);
      return { ok: false, ...(old && { current: verificationFromItem(old) }) };
    }
  }

  async countKeyRequest(request: KeyRequest): Promise<KeyRequestOutcome> {
    const { keyHash } = request;
    const window = request.windowStart.getTime();
    const stale = (this.keyWindows.get(keyHash) ?? []).filter((seen) => isStaleWindow(seen, window));
    let written = await this.writeKeyRequest(request, window, stale);
    if (written === 'no-counts') {
      // A key issued before the counts map: add it once, then the one write again.
      await this.addRateCounts(keyHash);
      written = await this.writeKeyRequest(request, window, stale);
      if (written === 'no-counts') throw new Error('The API key item still has no rate_counts map');
    }
    const { counted, image } = written;
    if (!counted && (!image || image.revoked_at !== undefined || image.service_sid !== request.serviceSid)) {
      this.keyWindows.delete(keyHash);
      if (!image) return { outcome: 'unknown' };
      return { outcome: image.revoked_at !== undefined ? 'revoked' : 'forbidden' };
    }
    // What the item holds now: its image before the write, less what a successful write removed, plus its window.
    const held = windowsOf(image).filter((seen) => !counted || !stale.includes(seen));
    if (counted && !held.includes(window)) held.push(window);
    const staleNow = held.filter((seen) => isStaleWindow(seen, window));
    if (counted && staleNow.length > STALE_WINDOWS_BOUND) {
      // Instances that each wrote once and were gone before their next write left these: removed now, once,
      // so the item stays small whatever the instances' lives.
      await this.removeRateWindows(keyHash, staleNow);
      this.rememberKeyWindows(
        keyHash,
        held.filter((seen) => !staleNow.includes(seen)),
      );
    } else this.rememberKeyWindows(keyHash, held);
    return { outcome: counted ? 'allowed' : 'limited', window };
  }

  /**
   * The per-key limit's one write: counts in `window`'s entry of `rate_counts` (created at 0 if absent) while
   * the key is usable and the entry is below the limit, removes the `stale` windows in the same write, and
   * keeps `rate_window` (the key's last-used minute). Both outcomes come with the item as it was before.
   * `no-counts`: the item has no `rate_counts` map to count in (DynamoDB refuses a nested SET then).
   */
  private async writeKeyRequest(
    request: KeyRequest,
    window: number,
    stale: number[],
  ): Promise<{ counted: boolean; image?: Record<string, unknown> } | 'no-counts'> {
    const names: Record<string, string> = { '#w': rateWindowName(window) };
    stale.forEach((seen, i) => (names[`#s${i}`] = rateWindowName(seen)));
    const remove = stale.length ? ` REMOVE ${stale.map((_, i) => `${RATE_COUNTS}.#s${i}`).join(', ')}` : '';
    try {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.apiKey(request.keyHash),
          UpdateExpression: `SET ${RATE_COUNTS}.#w = if_not_exists(${RATE_COUNTS}.#w, :zero) + :one, rate_window = :window${remove}`,
          ConditionExpression: `${KEY_USABLE} AND (attribute_not_exists(${RATE_COUNTS}.#w) OR ${RATE_COUNTS}.#w < :limit)`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: {
            ':service': request.serviceSid,
            ':window': window,
            ':zero': 0,
            ':one': 1,
            ':limit': request.limit,
          },
          // The key's item is small; returned images cost no write units.
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { counted: true, ...(Attributes && { image: Attributes }) };
    } catch (error) {
      if (isConditionFailure(error)) {
        const image = oldImage(error);
        return { counted: false, ...(image && { image }) };
      }
      if (isMissingMap(error)) return 'no-counts';
      throw error;
    }
  }

  /** Gives a key item written before the counts map one, and drops its old single count (`rate_count`). */
  private async addRateCounts(keyHash: string): Promise<void> {
    await this.updateIfConditionHolds({
      Key: keys.apiKey(keyHash),
      UpdateExpression: `SET ${RATE_COUNTS} = :empty REMOVE rate_count`,
      // Another request may have added it meanwhile (its counts must stay); never creates an item.
      ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(${RATE_COUNTS})`,
      ExpressionAttributeValues: { ':empty': {} },
    });
  }

  private async removeRateWindows(keyHash: string, windows: number[]): Promise<void> {
    await this.updateIfConditionHolds({
      Key: keys.apiKey(keyHash),
      UpdateExpression: `REMOVE ${windows.map((_, i) => `${RATE_COUNTS}.#s${i}`).join(', ')}`,
      ConditionExpression: `attribute_exists(${RATE_COUNTS})`,
      ExpressionAttributeNames: Object.fromEntries(
        windows.map((seen, i) => [`#s${i}`, rateWindowName(seen)]),
      ),
    });
  }

  private rememberKeyWindows(keyHash: string, windows: number[]): void {
    // Bounded memory: a caller cycling keys must not grow it without end.
    if (this.keyWindows.size >= REMEMBERED_KEYS && !this.keyWindows.has(keyHash)) this.keyWindows.clear();
    this.keyWindows.set(keyHash, windows);
  }

  async claimChannel(
    sid: string,
    index: number,
    claim: DeliveryAttempt,
    answered: AnsweredAttempts = {},
    channel?: Channel | null,
  ): Promise<boolean> {
    const sets = ['#deliveries.#index = :claim'];
    const values: Record<string, unknown> = { ':claim': claim, ':pending': 'PENDING' };
    if (channel !== undefined) {
      sets.push('#channel = :channel');
      values[':channel'] = channel;
    }
    // The channels before it that the workflow carried an answer for are recorded by the same write.
    const answeredNames = deliveriesEntries(answered, sets, values);
    return this.updateIfConditionHolds({
      Key: keys.verification(sid),
      UpdateExpression: `SET ${sets.join(', ')}`,
      // Only while delivery runs: a claim after the end would make an ended delivery look unsettled.
      ConditionExpression:
        'attribute_exists(pk) AND attribute_not_exists(#deliveries.#index) AND delivery_status = :pending',
      ExpressionAttributeNames: {
        '#deliveries': VERIFICATION_ATTR.deliveries,
        '#index': String(index),
        ...(channel !== undefined && { '#channel': VERIFICATION_ATTR.channel }),
        ...answeredNames,
      },
      ExpressionAttributeValues: values,
    });
  }

  async markReceiptFailed(sid: string, index: number): Promise<boolean> {
    // A string: the state machine compares it with the channel index it formats (statemachine/delivery.asl.json).
    return this.updateIfConditionHolds({
      Key: keys.verification(sid),
      UpdateExpression: 'SET #failed = :index',
      // A repeated failure receipt is a duplicate.
      ConditionExpression:
        'attribute_exists(pk) AND delivery_status = :pending AND (attribute_not_exists(#failed) OR #failed <> :index)',
      ExpressionAttributeNames: { '#failed': RECEIPT_FAILED_ATTRIBUTE },
      ExpressionAttributeValues: { ':index': String(index), ':pending': 'PENDING' },
    });
  }

  async recordChannelOutcome(sid: string, index: number, attempt: DeliveryAttempt): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.verification(sid),
        UpdateExpression: 'SET deliveries.#index = :attempt',
        ExpressionAttributeNames: { '#index': String(index) },
        ExpressionAttributeValues: { ':attempt': attempt },
      }),
    );
  }

  async finishDelivery(
    sid: string,
    status: 'SENT' | 'FAILED',
    now: Date,
    answered: AnsweredAttempts = {},
  ): Promise<void> {
    // Refused when already ended: a receipt made it DELIVERED (and dropped the code), or this task ran twice.
    await this.updateIfConditionHolds({
      Key: keys.verification(sid),
      ...statusWrite({
        set: { deliveryStatus: status },
        attempts: answered,
        remove: DELIVERY_ENDED_REMOVES,
        condition: `${attr('deliveryStatus')} = :pending`,
        values: { ':pending': 'PENDING' },
        now,
      }),
    });
  }

  async markDelivered(
    sid: string,
    channel: Channel,
    now: Date,
    answered: AnsweredAttempts = {},
  ): Promise<boolean> {
    return this.updateIfConditionHolds({
      Key: keys.verification(sid),
      ...statusWrite({
        set: { deliveryStatus: 'DELIVERED', channel },
        attempts: answered,
        remove: DELIVERY_ENDED_REMOVES,
        // Forward only: PENDING or SENT become DELIVERED; DELIVERED stays, and FAILED is final.
        condition: `${attr('deliveryStatus')} IN (:pending, :sent)`,
        values: { ':pending': 'PENDING', ':sent': 'SENT' },
        now,
      }),
    });
  }

  async recordRejections(e164: string, channels: Channel[], until: Date): Promise<void> {
    const names = Object.fromEntries(channels.map((channel, i) => [`#r${i}`, rejectedAttribute(channel)]));
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.number(e164),
        // The number's item exists (the accepting send wrote its log). Its TTL is pushed past the rejections.
        UpdateExpression: `SET ${Object.keys(names)
          .map((name) => `${name} = :until`)
          .join(', ')}, #ttl = :ttl`,
        ExpressionAttributeNames: { ...names, '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':until': until.getTime(), ':ttl': numberTtl(until, {}) },
      }),
    );
  }

  async listAcceptedSends(spans: readonly TimeSpan[]): Promise<AcceptedSend[][]> {
    // The ledger is per service: the directory lists the services once, then each one's charge lines per span.
    const services = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.serviceDirectory('').pk },
      ProjectionExpression: 'service_sid',
    });
    const lines: string[][] = spans.map(() => []);
    const queries = services.flatMap((item) =>
      spans.map((span, index) => async () => {
        const range = keys.chargeRange(item.service_sid as string, span.from, span.to);
        const found = await queryAll(this.client, {
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': range.pk, ':from': range.skFrom, ':to': range.skTo },
          ProjectionExpression: 'sk',
          // Strongly consistent: a line the query missed would never be looked at (the cursor moves past it).
          ConsistentRead: true,
        });
        lines[index]!.push(...found.map((line) => line.sk as string));
      }),
    );
    for (let i = 0; i < queries.length; i += LEDGER_QUERIES_AT_ONCE) {
      await Promise.all(queries.slice(i, i + LEDGER_QUERIES_AT_ONCE).map((query) => query()));
    }
    // `CHARGE#<time>#<sid>`: in time order across services.
    return lines.map((span) => span.sort().map(keys.chargedSend));
  }

  async readVerifications(sids: string[]): Promise<Verification[]> {
    const found: Verification[] = [];
    for (let i = 0; i < sids.length; i += BATCH_GET_KEYS) {
      const items = await this.batchGet(sids.slice(i, i + BATCH_GET_KEYS).map(keys.verification), false);
      found.push(...items.map(verificationFromItem));
    }
    return found;
  }

  async getSweepCursor(): Promise<SweepCursor | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.sweepCursor(), ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return {
      restartedThrough: Item.restarted_through as string,
      settledThrough: Item.settled_through as string,
      deferred: (Item.deferred as Record<string, string> | undefined) ?? {},
      version: Item.version as number,
    };
  }

  async saveSweepCursor(next: SweepCursor, seen: SweepCursor | undefined): Promise<boolean> {
    try {
      await this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...keys.sweepCursor(),
            type: 'sweep_cursor',
            restarted_through: next.restartedThrough,
            settled_through: next.settledThrough,
            deferred: next.deferred,
            version: next.version,
          },
          ConditionExpression: seen ? 'version = :seen' : 'attribute_not_exists(pk)',
          ...(seen && { ExpressionAttributeValues: { ':seen': seen.version } }),
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /** BatchGetItem, following UnprocessedKeys (rare; only under throttling) until every key is answered. */
  private async batchGet(wanted: ItemKey[], consistent: boolean): Promise<Record<string, unknown>[]> {
    const found: Record<string, unknown>[] = [];
    let pending: ItemKey[] = wanted;
    for (let round = 0; pending.length > 0; round++) {
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 20 * 2 ** round)));
      const result = await this.client.send(
        new BatchGetCommand({
          RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: consistent } },
        }),
      );
      found.push(...(result.Responses?.[this.tableName] ?? []));
      pending = (result.UnprocessedKeys?.[this.tableName]?.Keys as ItemKey[] | undefined) ?? [];
      if (round > 8 && pending.length > 0) throw new Error('DynamoDB left keys unprocessed after retries');
    }
    return found;
  }
}
