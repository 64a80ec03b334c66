/**
 * What the core needs from the outside world. DynamoDB, Step Functions, providers, crypto keys, the clock
 * and randomness sit behind these, so tests and the local stack wire the same core with other adapters.
 */
import type { GuardDecision, GuardView } from './guard/model';
import type { DeliveryAttempt, DeliveryStatus, NumberRecord, Service, Template, Verification } from './model';
import type { Channel } from './routing';
import type { SidPrefix } from './sids';

export interface Clock {
  now(): Date;
}

export interface Random {
  /** A uniformly random 6-digit code from a CSPRNG. */
  code(): string;
  /** A new SID: the prefix and 32 hex characters from 128 random bits. */
  sid(prefix: SidPrefix): string;
}

/** Keyed hashing and encryption of codes; the keys never leave the adapter. */
export interface CodeVault {
  /**
   * Settles when the vault's keys are loaded. A deployed function reads them at its first invocation, beside
   * that request's first round trips; the core awaits this just before it first hashes or seals. Absent: always.
   */
  ready?(): Promise<void>;
  /** HMAC of a code, bound to its verification. */
  hash(verificationSid: string, code: string): string;
  /** Encrypts a code for delivery, bound to its verification. */
  seal(verificationSid: string, code: string): string;
  open(verificationSid: string, sealed: string): string;
}

/** Everything a send reads before it decides, fetched in one round trip. */
export interface SendContext {
  service?: Service;
  /** The template named by `TemplateSid`, when one was asked for and exists for this service. */
  template?: Template;
  /** Verification SID remembered for the `Idempotency-Key`, when there is one. */
  idempotentSid?: string;
  number: NumberRecord;
  /** The pumping guard's state for the number's country (same read); absent: no signal stored. */
  guard?: GuardView;
  /** The verifications `verificationSids` named that exist. */
  previous?: Verification[];
  /**
   * The service's balance is spread over shards this read did not read (`Service.balanceShards` > 1):
   * `service.balance` holds one shard's, and only the accepting transaction can tell whether the whole pays.
   */
  balanceUnread?: true;
}

export interface SendContextQuery {
  serviceSid: string;
  templateSid?: string;
  idempotencyKey?: string;
  e164: string;
  /** The number's country: the guard state read with the rest is this country's. */
  country?: string;
  /**
   * True: the read holds every write acknowledged before it (DynamoDB's strongly consistent read). Otherwise it
   * may miss the last second's writes, for half the read units; the send reads that way first (core/send.ts).
   */
  latest?: boolean;
  /** Verifications read with the rest (`SendContext.previous`): the service's last sends to the number. */
  verificationSids?: string[];
  /** The send's time: an `Idempotency-Key` older than its 24 hours is not remembered, though TTL keeps it a while. */
  now: Date;
}

export interface AcceptSend {
  verification: Verification;
  idempotencyKey?: string;
  /** The number's log as read; the write happens only if it is still at this version. */
  number: NumberRecord;
  /** The number's send times after this send. */
  numberSends: number[];
  /** The number's `recent` after this send (absent: as read). */
  numberRecent?: NonNullable<NumberRecord['recent']>;
  now: Date;
  /** `Service.balanceShards` as read: how many items the balance is spread over. */
  balanceShards?: number;
  /**
   * Milliseconds left before the caller must have its answer (the function's time-out, less a margin). The charge
   * is written only with time left to learn whether it stands: else `no_time`, nothing written. Unbounded if absent.
   */
  timeLeftMs?: () => number;
}

export type AcceptResult =
  | { ok: true }
  /** Balance below the price. */
  | { ok: false; reason: 'insufficient_funds' }
  /** Another send with the same key was accepted first. */
  | { ok: false; reason: 'idempotency_key_taken' }
  /** The number's log or another item changed since it was read: read again and decide again. */
  | { ok: false; reason: 'conflict' }
  /**
   * Only the balance shard was in another transaction (a TransactionConflict): nothing read is known to have
   * changed, so decide again at once; a new verification SID draws on another shard.
   */
  | { ok: false; reason: 'balance_busy' }
  /** Too little of `timeLeftMs` to send the transaction and settle its answer: nothing was written. */
  | { ok: false; reason: 'no_time' };

export interface RecordRefusal {
  number: NumberRecord;
  numberSends: number[];
  now: Date;
  /** The pumping guard refused it: recorded in the same write, for the guard's stream consumer. */
  guard?: GuardDecision & { serviceSid: string; country: string; callerCode?: true };
}

export type CheckWrite =
  | { ok: true; verification: Verification }
  /** The condition failed; `current` is the item as it was (absent: no such verification). */
  | { ok: false; current?: Verification };

export interface VerificationStore {
  getVerification(sid: string): Promise<Verification | undefined>;
  loadSendContext(query: SendContextQuery): Promise<SendContext>;
  /** The verification an `Idempotency-Key` was accepted for, if any, within the key's 24 hours before `now`. */
  getIdempotentSid(serviceSid: string, idempotencyKey: string, now: Date): Promise<string | undefined>;
  /** Reads only the number's send log (retries after a conflict). */
  getNumber(e164: string): Promise<NumberRecord>;
  /** The charge, the verification, the idempotency item, the ledger line and the number log, all or none. */
  acceptSend(input: AcceptSend): Promise<AcceptResult>;
  /** Counts a refused send in the number's log; false when the log changed meanwhile. */
  recordRefusedSend(input: RecordRefusal): Promise<boolean>;
  /**
   * Spends one attempt and records `guessHash` as the last guess, in one write, only while the code belongs to
   * `serviceSid`, is PENDING, unexpired, has attempts left and was not guessed right already. The caller
   * compares only a guess that this write accepted, so no more guesses are compared than there are attempts.
   */
  spendAttempt(sid: string, serviceSid: string, guessHash: string, now: Date): Promise<CheckWrite>;
  /** Writes back EXPIRED for a PENDING code past its expiry (not one already verified or locked). */
  markExpired(sid: string, now: Date): Promise<void>;
}

/** What one authenticated request's write on its API key decided. */
export type KeyRequestOutcome =
  /** Counted within the limit. `window`: the window it was counted in (epoch ms). */
  | { outcome: 'allowed'; window: number }
  /** The key exists for this service, but its window is full; nothing counted. */
  | { outcome: 'limited'; window: number }
  /** No such key, or revoked: nothing counted. */
  | { outcome: 'unknown' | 'revoked' }
  /** The key belongs to another service than the one in the path: nothing counted. */
  | { outcome: 'forbidden' };

/** One request's write on its API key (see `ApiKeyStore.countKeyRequest`). */
export interface KeyRequest {
  keyHash: string;
  /** The service in the request's path. */
  serviceSid: string;
  /** The fixed one-minute window the caller's clock is in. */
  windowStart: Date;
  limit: number;
}

export interface ApiKeyStore {
  /**
   * Authenticates and counts a request in one write on the key's own item: the key must exist, not be revoked
   * and belong to `serviceSid`, and its count in the fixed one-minute window `windowStart` must be below
   * `limit`. A revocation therefore takes effect on the next request. Each window is counted apart, so callers
   * whose clocks differ slightly at a minute's edge each count in their own window.
   */
  countKeyRequest(request: KeyRequest): Promise<KeyRequestOutcome>;
}

/**
 * Attempts by channel index whose provider accepted the message and which the record still holds as claimed
 * (`sending`): written whole by the write they are given to, when that write is made (see `ChannelAnswer`).
 */
export type AnsweredAttempts = Record<string, DeliveryAttempt>;

export interface DeliveryStore {
  getVerification(sid: string): Promise<Verification | undefined>;
  /**
   * Claims channel `index` before its provider is called (outcome `sending`); false when another run of the
   * task claimed it first, or when delivery already ended. Express may run a task, or a whole execution,
   * twice: only the claimant sends. The claim of channel 0 dates the delivery's start: the sweeper settles a
   * delivery still PENDING past `settleDeadline` of it (core/delivery-time.ts). `channel`, when given, is
   * written as the verification's `channel` by the same write (null: no channel was handed the message yet).
   */
  claimChannel(
    sid: string,
    index: number,
    claim: DeliveryAttempt,
    answered?: AnsweredAttempts,
    channel?: Channel | null,
  ): Promise<boolean>;
  /**
   * Records that a failure receipt came for channel `index`, while delivery runs (`failedReceipts`), and, when it
   * is the `current` channel (none after it claimed), marks it for the state machine's status reads, which then
   * move to the next channel without waiting out the channel (`RECEIPT_FAILED_ATTRIBUTE`). False when delivery
   * has ended or the channel's failure was already recorded (a duplicate).
   */
  markReceiptFailed(sid: string, index: number, current: boolean): Promise<boolean>;
  /** Records a refusal or failure of the provider on the claimed channel (an acceptance rides a later write). */
  recordChannelOutcome(sid: string, index: number, attempt: DeliveryAttempt): Promise<void>;
  /** Ends delivery with SENT or FAILED unless a receipt already made it DELIVERED; drops the sealed code. */
  finishDelivery(
    sid: string,
    status: Extract<DeliveryStatus, 'SENT' | 'FAILED'>,
    now: Date,
    answered?: AnsweredAttempts,
  ): Promise<void>;
  /** DELIVERED over `channel` from PENDING or SENT, whenever the receipt comes; a duplicate or FAILED stays. */
  markDelivered(sid: string, channel: Channel, now: Date, answered?: AnsweredAttempts): Promise<boolean>;
  /** Remembers that each of `channels` rejected the number, until `until` (a later record extends it). */
  recordRejections(e164: string, channels: Channel[], until: Date): Promise<void>;
}

/**
 * What the sweeper reads to find deliveries that need it: the sends accepted in a span of time (the ledger,
 * which every accepted send writes in its transaction), their verifications, and its own cursor.
 */
export interface DeliverySweepStore {
  /**
   * For each span, the verifications accepted from `from` to `to` (both included), by their charge lines, oldest
   * first. Every accepted send has one; the list does not say whether its delivery ended. Several spans in one
   * call: the sweeper's two halves list the services once.
   */
  listAcceptedSends(spans: readonly TimeSpan[]): Promise<AcceptedSend[][]>;
  /** The verifications of `sids` that exist, eventually consistent: read one again before acting on it. */
  readVerifications(sids: string[]): Promise<Verification[]>;
  /** How far the sweeper has looked, and what it looks at again (absent before its first run). */
  getSweepCursor(): Promise<SweepCursor | undefined>;
  /** Saves `next` unless another run saved a cursor since `seen` was read (then false, nothing written). */
  saveSweepCursor(next: SweepCursor, seen: SweepCursor | undefined): Promise<boolean>;
}

export interface TimeSpan {
  from: Date;
  to: Date;
}

/** One accepted send, as its charge line names it. */
export interface AcceptedSend {
  sid: string;
  /** When it was accepted (ISO): the verification's creation time. */
  at: string;
}

/** The sweeper's progress through the ledger (times ISO): each accepted send is looked at once per half. */
export interface SweepCursor {
  /** The restart half has looked at every send accepted up to this time. */
  restartedThrough: string;
  /** The settle half has looked at every send accepted up to this time. */
  settledThrough: string;
  /** Deliveries to look at again, by SID: not before this time (a restart's, or a claim's deadline). */
  deferred: Record<string, string>;
  /** Written by every save, so two runs cannot both advance the cursor from the same reading. */
  version: number;
}

/** Starts the delivery workflow for an accepted send. Input carries the SID only, never the code. */
export interface DeliveryWorkflow {
  start(input: DeliveryInput): Promise<void>;
}

export interface DeliveryInput {
  sid: string;
  /** Names a restart distinctly from the first start (the first is named after the SID). */
  restart?: boolean;
  /** Seconds to wait for a receipt before the next channel. */
  waitSeconds: number;
}

/**
 * The tag of an API key: a MAC under the deployment's own key (core/api-key-format.ts), so a request can tell a
 * key this deployment issued from a made-up one without a table read. The key never leaves the adapter.
 */
export interface ApiKeyTagger {
  /** Settles when the key is loaded (a deployed function reads it at its first invocation). Absent: always. */
  ready?(): Promise<void>;
  /** False while `ready` would still wait (a cold instance). Absent: always ready. */
  isReady?(): boolean;
  /** The tag of `signed` (the key's prefix and body): base64url, `API_KEY_TAG_LENGTH` characters. */
  tag(signed: string): string;
}
