/**
 * The one builder of every UpdateItem that changes a verification's `status` or `delivery_status`. Such a write
 * must also `SET event_at = now` and `ADD event_seq 1`: the webhook events read from the change stream take
 * their sequence number and time from them (`eventMarksFromItem`), and a status change without them would
 * publish an event that consumers drop as stale. Written here once, so no write can forget them.
 */

/** Attribute names of a verification item that conditional writes name. */
export const VERIFICATION_ATTR = {
  serviceSid: 'service_sid',
  status: 'status',
  deliveryStatus: 'delivery_status',
  channel: 'channel',
  attemptsRemaining: 'attempts_remaining',
  expiresAt: 'expires_at',
  codeHash: 'code_hash',
  /** HMAC of the last guess that spent an attempt. */
  lastGuess: 'last_guess',
  /** Random id of the check request whose write spent the last attempt. */
  lastCheck: 'last_check',
  /** Random id of the last channel claim's write (a delivery task's), or of the receipt's that ended delivery. */
  lastClaim: 'last_claim',
  sealedCode: 'sealed_code',
  deliveries: 'deliveries',
  /** Number set of the channel indexes a failure receipt came for. */
  failedReceipts: 'failed_receipts',
  /** Time of the last status-changing write (ISO). */
  eventAt: 'event_at',
  /** Number of status-changing writes so far. */
  eventSeq: 'event_seq',
} as const;

export type VerificationAttr = keyof typeof VERIFICATION_ATTR;

/** The `#name` placeholder of an attribute, for conditions given to `statusWrite`. */
export const attr = (name: VerificationAttr): string => `#${VERIFICATION_ATTR[name]}`;

/** The code was not guessed right yet (see `settledStatus`): compares two stored attributes, never a guess. */
export const NOT_GUESSED = `(attribute_not_exists(${attr('lastGuess')}) OR ${attr('lastGuess')} <> ${attr('codeHash')})`;

export interface StatusWrite {
  /** Attributes to set to these values. */
  set?: Partial<Record<VerificationAttr, unknown>>;
  /** Attributes to lower by one. */
  decrement?: VerificationAttr[];
  remove?: VerificationAttr[];
  /**
   * The write's condition, naming attributes with `attr(...)`. It may use `:now` (the write's time, ISO) and
   * `:one`; its other values go in `values`.
   */
  condition: string;
  values?: Record<string, unknown>;
  /** Entries of the `deliveries` map to set whole, by channel index (answers the workflow carried). */
  attempts?: Record<string, unknown>;
  now: Date;
}

export interface StatusUpdateExpressions {
  UpdateExpression: string;
  ConditionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues: Record<string, unknown>;
}

const ATTR_BY_NAME = new Map<string, string>(Object.values(VERIFICATION_ATTR).map((name) => [name, name]));

/**
 * The update expressions of a status-changing write, with the event marks added. Every attribute goes through
 * a `#name` placeholder (`status` is a reserved word); only the names used are declared, as DynamoDB requires.
 */
export function statusWrite(write: StatusWrite): StatusUpdateExpressions {
  const values: Record<string, unknown> = { ':now': write.now.toISOString(), ':one': 1 };
  for (const [name, value] of Object.entries(write.values ?? {})) {
    if (name in values && values[name] !== value) throw new Error(`${name} is the status write's own value`);
    if (name.startsWith(':set_')) throw new Error(`${name}: the :set_ prefix is the status write's own`);
    values[name] = value;
  }
  const sets = Object.entries(write.set ?? {}).map(([name, value]) => {
    values[`:set_${name}`] = value;
    return `${attr(name as VerificationAttr)} = :set_${name}`;
  });
  for (const name of write.decrement ?? []) sets.push(`${attr(name)} = ${attr(name)} - :one`);
  const attemptNames = deliveriesEntries(write.attempts ?? {}, sets, values);
  sets.push(`${attr('eventAt')} = :now`);
  const UpdateExpression = [
    `SET ${sets.join(', ')}`,
    ...(write.remove?.length ? [`REMOVE ${write.remove.map(attr).join(', ')}`] : []),
    `ADD ${attr('eventSeq')} :one`,
  ].join(' ');
  const ConditionExpression = write.condition;
  const ExpressionAttributeNames: Record<string, string> = {};
  for (const [, name] of `${UpdateExpression} ${ConditionExpression}`.matchAll(/#(\w+)/g)) {
    const attribute = ATTR_BY_NAME.get(name!) ?? attemptNames[`#${name}`];
    if (!attribute) throw new Error(`#${name} is not a verification attribute (VERIFICATION_ATTR)`);
    ExpressionAttributeNames[`#${name}`] = attribute;
  }
  const used = `${UpdateExpression} ${ConditionExpression}`;
  for (const name of Object.keys(values)) {
    // DynamoDB refuses a value that no expression uses: say which, before the request.
    if (!new RegExp(`${name}(?!\\w)`).test(used)) throw new Error(`${name} is not used by the status write`);
  }
  return {
    UpdateExpression,
    ConditionExpression,
    ExpressionAttributeNames,
    ExpressionAttributeValues: values,
  };
}

/**
 * `deliveries.#attemptN = :attemptN` for each entry, into `sets` and `values`; returns the `#attemptN` names
 * (a map key is a channel index, which DynamoDB takes only through a placeholder). Shared by the status writes
 * and the channel claim, so both write an attempt the same way.
 */
export function deliveriesEntries(
  attempts: Record<string, unknown>,
  sets: string[],
  values: Record<string, unknown>,
): Record<string, string> {
  const names: Record<string, string> = {};
  for (const [index, attempt] of Object.entries(attempts)) {
    if (!/^\d{1,2}$/.test(index)) throw new Error(`${index} is not a channel index`);
    names[`#attempt${index}`] = index;
    values[`:attempt${index}`] = attempt;
    sets.push(`${attr('deliveries')}.#attempt${index} = :attempt${index}`);
  }
  return names;
}
