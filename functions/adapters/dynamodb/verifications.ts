/** The verification port on the table: the send's reads and its accepting transaction, checks and expiry. */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  TransactWriteCommand,
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
import { batchGetAll, isConditionFailure, oldImage, updateIfConditionHolds } from './requests';
import { NOT_GUESSED, attr, statusWrite } from './status-write';

/** Re-sends of the accepting transaction, with its token, when its answer was not clear. */
const MAX_TRANSACTION_RESENDS = 2;

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
    // The pumping guard's state for the number's country rides in the same request (no extra round trip).
    const guardKeys = query.country ? guardViewKeys(query.serviceSid, query.country) : [];
    const items = await batchGetAll(
      this.client,
      this.tableName,
      [...Object.values(wanted), ...guardKeys],
      query.latest === true,
    );
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
    if (!input.guard) return updateIfConditionHolds(this.client, this.tableName, update);
    // The guard's refusal goes in the same write: the table's stream carries it to the guard's consumer.
    return updateIfConditionHolds(this.client, this.tableName, {
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
}
