/**
 * Every storage port in memory, with the same conditions as `DynamoStore` (test/contract/ runs one suite
 * against both). It keeps domain objects, not table items; unit tests of the core and fast local tools use it.
 * Each method decides and writes without awaiting in between, so like DynamoDB's conditional writes each one
 * is atomic: concurrent calls see each other's writes whole.
 */
import type {
  ApiKeyRecord,
  DeliveryAttempt,
  NumberRecord,
  Service,
  Template,
  Verification,
} from '../../core/model';
import type {
  AcceptResult,
  AcceptedSend,
  AcceptSend,
  ApiKeyStore,
  CheckWrite,
  AnsweredAttempts,
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
import type { WebhookEndpoint, WebhookEndpointStore } from '../../core/webhooks';
import { MemoryGuardStore } from './guard';

/** One line of the ledger, written with the charge. */
export interface MemoryCharge {
  serviceSid: string;
  verificationSid: string;
  amount: number;
  at: string;
}

/** The webhook event marks every status-changing write advances (what `event_seq` and `event_at` hold). */
export interface EventMarks {
  sequence: number;
  at: Date | undefined;
}

interface StoredKey {
  record: ApiKeyRecord;
  /** Requests counted per one-minute window (its start, epoch ms). */
  counts: Map<number, number>;
}

const clone = <T>(value: T): T => structuredClone(value);

export class MemoryStore
  implements VerificationStore, ApiKeyStore, DeliveryStore, DeliverySweepStore, WebhookEndpointStore
{
  private readonly services = new Map<string, Service>();
  private readonly templates = new Map<string, Template>();
  private readonly apiKeys = new Map<string, StoredKey>();
  private readonly verifications = new Map<string, Verification>();
  private readonly events = new Map<string, EventMarks>();
  /** The sweeper's cursor, as saved (one item in DynamoDB). */
  private sweepCursor: SweepCursor | undefined;
  /** Per key, the verification SID and until when (ms) it is remembered: 24 hours, as the table's `ttl`. */
  private readonly idempotency = new Map<string, { sid: string; until: number }>();
  private readonly numbers = new Map<string, NumberRecord>();
  private readonly endpoints = new Map<string, WebhookEndpoint>();
  private readonly ledger: MemoryCharge[] = [];
  /** The pumping guard's state (what a send reads), written by its consumer in tests. */
  readonly guard = new MemoryGuardStore(
    (sid) => this.services.get(sid)?.guard,
    () => this.services.size,
  );
  /** Refusals the guard made, as the DynamoDB store writes them on the number's log. */
  readonly guardRefusals: (NonNullable<RecordRefusal['guard']> & { e164: string })[] = [];

  // --- seeding and inspection (what the admin side and tests do) ----------------------------------------------

  putService(service: Service): void {
    this.services.set(service.sid, clone(service));
  }

  putTemplate(serviceSid: string, template: Template): void {
    this.templates.set(`${serviceSid}/${template.sid}`, clone(template));
  }

  putApiKey(record: ApiKeyRecord): void {
    this.apiKeys.set(record.keyHash, { record: clone(record), counts: new Map() });
  }

  /** Registers an endpoint and lists it on its service, as the DynamoDB store's add transaction does. */
  putWebhookEndpoint(endpoint: WebhookEndpoint): void {
    this.endpoints.set(`${endpoint.serviceSid}/${endpoint.sid}`, clone(endpoint));
    const service = this.services.get(endpoint.serviceSid);
    if (service && !service.webhookEndpoints.includes(endpoint.sid))
      service.webhookEndpoints = [...service.webhookEndpoints, endpoint.sid].sort();
  }

  getService(serviceSid: string): Service | undefined {
    const service = this.services.get(serviceSid);
    return service && clone(service);
  }

  charges(serviceSid: string): MemoryCharge[] {
    return this.ledger.filter((charge) => charge.serviceSid === serviceSid).map(clone);
  }

  eventMarks(sid: string): EventMarks {
    return clone(this.events.get(sid) ?? { sequence: 0, at: undefined });
  }

  // --- VerificationStore ----------------------------------------------------------------------------------

  async getVerification(sid: string): Promise<Verification | undefined> {
    const verification = this.verifications.get(sid);
    return verification && clone(verification);
  }

  async getNumber(e164: string): Promise<NumberRecord> {
    return clone(this.numbers.get(e164) ?? { e164, sends: [], rejectedUntil: {}, version: 0 });
  }

  async loadSendContext(query: SendContextQuery): Promise<SendContext> {
    const service = this.services.get(query.serviceSid);
    const template = query.templateSid && this.templates.get(`${query.serviceSid}/${query.templateSid}`);
    const idempotentSid =
      query.idempotencyKey &&
      this.remembered(idempotencyKey(query.serviceSid, query.idempotencyKey), query.now);
    return {
      ...(service && { service: clone(service) }),
      ...(template && { template: clone(template) }),
      ...(idempotentSid && { idempotentSid }),
      number: await this.getNumber(query.e164),
      ...(query.country && { guard: this.guard.view(query.serviceSid, query.country) }),
      ...(query.verificationSids && {
        previous: query.verificationSids.flatMap((sid) => {
          const found = this.verifications.get(sid);
          return found ? [clone(found)] : [];
        }),
      }),
    };
  }

  async getIdempotentSid(serviceSid: string, key: string, now: Date): Promise<string | undefined> {
    return this.remembered(idempotencyKey(serviceSid, key), now);
  }

  private remembered(key: string, now: Date): string | undefined {
    const entry = this.idempotency.get(key);
    return entry && entry.until > now.getTime() ? entry.sid : undefined;
  }

  async acceptSend(input: AcceptSend): Promise<AcceptResult> {
    const { verification, now } = input;
    const key = input.idempotencyKey && idempotencyKey(verification.serviceSid, input.idempotencyKey);
    const service = this.services.get(verification.serviceSid);
    // Its writes take no time: only a caller already out of time is refused, as DynamoDB's store would refuse it.
    if (input.timeLeftMs && input.timeLeftMs() <= 0) return { ok: false, reason: 'no_time' };
    // The same order of reasons as the DynamoDB transaction's cancellation.
    if (key && this.remembered(key, now)) return { ok: false, reason: 'idempotency_key_taken' };
    if (!this.numberAtVersion(input.number)) return { ok: false, reason: 'conflict' };
    if (!service || service.balance < verification.price) return { ok: false, reason: 'insufficient_funds' };
    if (this.verifications.has(verification.sid)) return { ok: false, reason: 'conflict' };

    service.balance -= verification.price;
    this.verifications.set(verification.sid, clone(verification));
    this.ledger.push({
      serviceSid: verification.serviceSid,
      verificationSid: verification.sid,
      amount: verification.price,
      at: now.toISOString(),
    });
    this.writeNumberLog(input.number, input.numberSends, input.numberRecent);
    if (key) this.idempotency.set(key, { sid: verification.sid, until: now.getTime() + IDEMPOTENCY_MS });
    return { ok: true };
  }

  async recordRefusedSend(input: RecordRefusal): Promise<boolean> {
    if (!this.numberAtVersion(input.number)) return false;
    this.writeNumberLog(input.number, input.numberSends);
    if (input.guard) this.guardRefusals.push({ ...clone(input.guard), e164: input.number.e164 });
    return true;
  }

  private numberAtVersion(number: NumberRecord): boolean {
    return (this.numbers.get(number.e164)?.version ?? 0) === number.version;
  }

  private writeNumberLog(number: NumberRecord, sends: number[], recent?: NumberRecord['recent']): void {
    const stored = this.numbers.get(number.e164);
    const kept = recent ?? stored?.recent;
    this.numbers.set(number.e164, {
      e164: number.e164,
      sends: [...sends],
      rejectedUntil: { ...stored?.rejectedUntil },
      ...(kept && { recent: clone(kept) }),
      version: number.version + 1,
    });
  }

  async spendAttempt(sid: string, serviceSid: string, guessHash: string, now: Date): Promise<CheckWrite> {
    const stored = this.verifications.get(sid);
    if (!stored) return { ok: false };
    const usable =
      stored.serviceSid === serviceSid &&
      stored.status === 'PENDING' &&
      stored.expiresAt > now.toISOString() &&
      stored.attemptsRemaining > 0 &&
      stored.codeHash !== undefined &&
      notGuessed(stored);
    if (!usable) return { ok: false, current: clone(stored) };
    stored.attemptsRemaining -= 1;
    stored.lastGuessHash = guessHash;
    // Like the DynamoDB write: every spent attempt may settle the code, so every one is marked.
    this.markEvent(sid, now);
    return { ok: true, verification: clone(stored) };
  }

  async markExpired(sid: string, now: Date): Promise<void> {
    const stored = this.verifications.get(sid);
    if (
      !stored ||
      stored.status !== 'PENDING' ||
      stored.expiresAt > now.toISOString() ||
      stored.attemptsRemaining <= 0 ||
      !notGuessed(stored)
    )
      return;
    stored.status = 'EXPIRED';
    this.markEvent(sid, now);
  }

  // --- ApiKeyStore ------------------------------------------------------------------------------------------

  async countKeyRequest(request: KeyRequest): Promise<KeyRequestOutcome> {
    const key = this.apiKeys.get(request.keyHash);
    if (!key) return { outcome: 'unknown' };
    if (key.record.revokedAt !== undefined) return { outcome: 'revoked' };
    if (key.record.serviceSid !== request.serviceSid) return { outcome: 'forbidden' };
    const window = request.windowStart.getTime();
    // Each window is counted apart, as in DynamoDB's `rate_counts` (one before this one kept for clocks behind).
    const count = key.counts.get(window) ?? 0;
    if (count >= request.limit) return { outcome: 'limited', window };
    for (const seen of key.counts.keys()) if (seen < window - 60_000) key.counts.delete(seen);
    key.counts.set(window, count + 1);
    return { outcome: 'allowed', window };
  }

  // --- DeliveryStore ----------------------------------------------------------------------------------------

  async claimChannel(
    sid: string,
    index: number,
    claim: DeliveryAttempt,
    answered: AnsweredAttempts = {},
    channel?: Channel | null,
  ): Promise<boolean> {
    const stored = this.verifications.get(sid);
    if (!stored || stored.deliveries[String(index)] || stored.deliveryStatus !== 'PENDING') return false;
    stored.deliveries[String(index)] = clone(claim);
    Object.assign(stored.deliveries, clone(answered));
    if (channel !== undefined) stored.channel = channel;
    return true;
  }

  /** The channel index a failure receipt named, per verification (the item attribute `receipt_failed`). */
  readonly receiptFailed = new Map<string, number>();

  async markReceiptFailed(sid: string, index: number, current: boolean): Promise<boolean> {
    const stored = this.verifications.get(sid);
    if (!stored || stored.deliveryStatus !== 'PENDING' || stored.failedReceipts?.includes(index))
      return false;
    stored.failedReceipts = [...(stored.failedReceipts ?? []), index].sort((a, b) => a - b);
    if (current) this.receiptFailed.set(sid, index);
    return true;
  }

  async recordChannelOutcome(sid: string, index: number, attempt: DeliveryAttempt): Promise<void> {
    const stored = this.verifications.get(sid);
    if (!stored) throw new Error(`No verification ${sid} to record a channel outcome on`);
    stored.deliveries[String(index)] = clone(attempt);
  }

  async finishDelivery(
    sid: string,
    status: 'SENT' | 'FAILED',
    now: Date,
    answered: AnsweredAttempts = {},
  ): Promise<void> {
    const stored = this.verifications.get(sid);
    if (!stored || stored.deliveryStatus !== 'PENDING') return;
    stored.deliveryStatus = status;
    Object.assign(stored.deliveries, clone(answered));
    this.endDelivery(stored, now);
  }

  async markDelivered(
    sid: string,
    channel: Channel,
    now: Date,
    answered: AnsweredAttempts = {},
  ): Promise<boolean> {
    const stored = this.verifications.get(sid);
    if (!stored || (stored.deliveryStatus !== 'PENDING' && stored.deliveryStatus !== 'SENT')) return false;
    stored.deliveryStatus = 'DELIVERED';
    Object.assign(stored.deliveries, clone(answered));
    stored.channel = channel;
    this.endDelivery(stored, now);
    return true;
  }

  /** Delivery ended: the sealed code is dropped. */
  private endDelivery(stored: Verification, now: Date): void {
    delete stored.sealedCode;
    this.markEvent(stored.sid, now);
  }

  async recordRejections(e164: string, channels: Channel[], until: Date): Promise<void> {
    const number = this.numbers.get(e164) ?? { e164, sends: [], rejectedUntil: {}, version: 0 };
    for (const channel of channels) number.rejectedUntil[channel] = until.getTime();
    this.numbers.set(e164, number);
  }

  // --- DeliverySweepStore ------------------------------------------------------------------------------------

  async listAcceptedSends(spans: readonly TimeSpan[]): Promise<AcceptedSend[][]> {
    return spans.map(({ from, to }) =>
      this.ledger
        .filter((line) => new Date(line.at) >= from && new Date(line.at) <= to)
        .map((line) => ({ sid: line.verificationSid, at: line.at }))
        .sort((a, b) => `${a.at}#${a.sid}`.localeCompare(`${b.at}#${b.sid}`)),
    );
  }

  async readVerifications(sids: string[]): Promise<Verification[]> {
    return sids.flatMap((sid) => {
      const stored = this.verifications.get(sid);
      return stored ? [clone(stored)] : [];
    });
  }

  async getSweepCursor(): Promise<SweepCursor | undefined> {
    return this.sweepCursor && clone(this.sweepCursor);
  }

  async saveSweepCursor(next: SweepCursor, seen: SweepCursor | undefined): Promise<boolean> {
    if ((this.sweepCursor?.version ?? 0) !== (seen?.version ?? 0)) return false;
    this.sweepCursor = clone(next);
    return true;
  }

  // --- WebhookEndpointStore ---------------------------------------------------------------------------------

  async listEndpoints(serviceSid: string): Promise<WebhookEndpoint[]> {
    return [...this.endpoints.values()]
      .filter((endpoint) => endpoint.serviceSid === serviceSid)
      .sort((a, b) => (a.sid < b.sid ? -1 : 1))
      .map(clone);
  }

  async getEndpoint(serviceSid: string, endpointSid: string): Promise<WebhookEndpoint | undefined> {
    const endpoint = this.endpoints.get(`${serviceSid}/${endpointSid}`);
    return endpoint && clone(endpoint);
  }

  private markEvent(sid: string, now: Date): void {
    const marks = this.events.get(sid) ?? { sequence: 0, at: undefined };
    this.events.set(sid, { sequence: marks.sequence + 1, at: new Date(now) });
  }
}

const idempotencyKey = (serviceSid: string, key: string): string => `${serviceSid}\n${key}`;
/** How long an `Idempotency-Key` is remembered (docs/api.md). */
const IDEMPOTENCY_MS = 24 * 3_600_000;

/** The code was not guessed right yet: compares two stored hashes, never a guess (see `settledStatus`). */
const notGuessed = (v: Verification): boolean =>
  v.lastGuessHash === undefined || v.lastGuessHash !== v.codeHash;
