/**
 * Request shapes the DynamoDB adapters share: a refused condition told apart from other errors (with the item's
 * old image), a Query read to its last page, a BatchGetItem read to its last key, conditional updates, and
 * writes that stand or not whatever answers are lost on the way.
 */
import { randomUUID } from 'node:crypto';
import { TransactionCanceledException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  BatchGetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type TransactWriteCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { worstCallMs } from './client';
import type { ItemKey } from './keys';

/** The write's condition did not hold (not an outage: the caller decides what it means). */
export const isConditionFailure = (error: unknown): boolean =>
  error instanceof Error && error.name === 'ConditionalCheckFailedException';

/** Every item the query matches, all pages. */
export async function queryAll(
  client: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, 'ExclusiveStartKey'>,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** Updates the item at `key` if it exists; false when it does not (an update never creates it). */
export async function updateExisting(
  client: DynamoDBDocumentClient,
  tableName: string,
  key: ItemKey,
  expression: string,
  values: Record<string, unknown>,
): Promise<boolean> {
  try {
    await client.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: expression,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * The failed item's old image, which DynamoDB returns with `ReturnValuesOnConditionCheckFailure`. The
 * document client does not unmarshall errors, so it arrives as raw attribute values.
 */
const oldImage = (error: unknown): Record<string, unknown> | undefined => {
  const item = (error as { Item?: Record<string, AttributeValue> }).Item;
  return item && unmarshall(item);
};

/** An UpdateItem whose failed condition is an answer, not an error: false when the condition did not hold. */
export async function updateIfConditionHolds(
  client: DynamoDBDocumentClient,
  tableName: string,
  update: Omit<UpdateCommandInput, 'TableName'>,
): Promise<boolean> {
  try {
    await client.send(new UpdateCommand({ ...update, TableName: tableName }));
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * A conditional UpdateItem that tells its own write from another's. The SDK sends a request again when an
 * attempt's answer is lost: applied the first time, the write is refused the second (the item moved on), and a
 * refused write reads as someone else's (a channel claimed by another task, a refusal or a check to decide
 * again). The write records a random id in the attribute `mark`, its condition refuses that id once written (a
 * write whose own condition would hold again is not applied twice), and a refused write that finds its id stands.
 * `item`: the item after an applied write (`ReturnValues: 'ALL_NEW'`), or as a refused one found it.
 */
export async function markedUpdate(
  client: DynamoDBDocumentClient,
  tableName: string,
  update: Omit<UpdateCommandInput, 'TableName'>,
  mark: string,
): Promise<{ applied: boolean; item?: Record<string, unknown> }> {
  const expression = update.UpdateExpression ?? '';
  if (!expression.startsWith('SET ') || !update.ConditionExpression)
    throw new Error(`a marked update has a condition and starts with SET: ${expression}`);
  const id = randomUUID();
  try {
    const { Attributes } = await client.send(
      new UpdateCommand({
        ...update,
        TableName: tableName,
        UpdateExpression: `SET #writeMark = :writeMark, ${expression.slice('SET '.length)}`,
        ConditionExpression: `(${update.ConditionExpression}) AND (attribute_not_exists(#writeMark) OR #writeMark <> :writeMark)`,
        ExpressionAttributeNames: { ...update.ExpressionAttributeNames, '#writeMark': mark },
        ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':writeMark': id },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { applied: true, ...(Attributes && { item: Attributes }) };
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const old = oldImage(error);
    return { applied: old?.[mark] === id, ...(old && { item: old }) };
  }
}

/** Re-sends of a transaction, with its token, when its answer was not clear (`transactSettled`). */
const TRANSACTION_RESENDS = 2;

/** `transactSettled` did not send the transaction: too little time was left to learn its outcome. */
export class NoTimeToSettle extends Error {
  constructor() {
    super('too little time left to send the transaction and settle its answer');
    this.name = 'NoTimeToSettle';
  }
}

/**
 * A transaction whose answer may be lost (a time-out, an InternalServerError or throttling after the SDK's
 * retries, TransactionInProgress: the first is still being applied), where answering an error for a write that
 * stands would have the caller do it twice (a charge, a credit). Sent again with its `ClientRequestToken`, which
 * DynamoDB applies once; a resend cancelled, or no answer still, says nothing of the first send: `stands` (a
 * consistent read of an item only this transaction writes) tells. Throws the cancellation of a transaction that
 * did not apply (its reasons are the caller's to read), or the last error when nothing can tell.
 *
 * `timeLeftMs`: the caller's time before it must answer. Each send of the transaction, the first included, goes
 * only while the slowest call (`worstCallMs`) and the read that settles it still fit; else the first is never
 * sent (`NoTimeToSettle`) and a resend gives way to the read. Cut off by its own time-out, the caller could not
 * say whether the write stands.
 */
export async function transactSettled(
  client: DynamoDBDocumentClient,
  transaction: TransactWriteCommandInput & { ClientRequestToken: string },
  stands: () => Promise<boolean>,
  timeLeftMs: () => number = () => Infinity,
): Promise<void> {
  const settlingMs = 2 * worstCallMs();
  if (timeLeftMs() < settlingMs) throw new NoTimeToSettle();
  let unclear = false;
  for (let resend = 0; ; resend++) {
    try {
      await client.send(new TransactWriteCommand(transaction));
      return;
    } catch (error) {
      if (error instanceof TransactionCanceledException) {
        if (unclear && (await stands())) return;
        throw error;
      }
      unclear = true;
      const pause = 50 * 2 ** resend;
      if (resend < TRANSACTION_RESENDS && timeLeftMs() - pause >= settlingMs) {
        await new Promise((resolve) => setTimeout(resolve, pause));
        continue;
      }
      if (await stands()) return;
      throw error;
    }
  }
}

/** BatchGetItem, following UnprocessedKeys (rare; only under throttling) until every key is answered. */
export async function batchGetAll(
  client: DynamoDBDocumentClient,
  tableName: string,
  wanted: ItemKey[],
  consistent: boolean,
): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  let pending: ItemKey[] = wanted;
  for (let round = 0; pending.length > 0; round++) {
    if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 20 * 2 ** round)));
    const result = await client.send(
      new BatchGetCommand({
        RequestItems: { [tableName]: { Keys: pending, ConsistentRead: consistent } },
      }),
    );
    found.push(...(result.Responses?.[tableName] ?? []));
    pending = (result.UnprocessedKeys?.[tableName]?.Keys as ItemKey[] | undefined) ?? [];
    if (round > 8 && pending.length > 0) throw new Error('DynamoDB left keys unprocessed after retries');
  }
  return found;
}
