/**
 * The single-table adapter behind every storage port, composed of one adapter per port: one object for the
 * wiring, the tests and the bench, which hand it to whatever port they need.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DeliveryAttempt, NumberRecord, Verification } from '../../core/model';
import type {
  AcceptResult,
  AcceptSend,
  AcceptedSend,
  AnsweredAttempts,
  ApiKeyStore,
  CheckWrite,
  DeliveryStore,
  DeliverySweepStore,
  KeyRequest,
  KeyRequestOutcome,
  RecordRefusal,
  SendContext,
  SendContextQuery,
  SweepCursor,
  TimeSpan,
  VerificationStore,
} from '../../core/ports';
import type { Channel } from '../../core/routing';
import { DynamoApiKeyStore } from './api-key-requests';
import { DynamoDeliveryStore } from './delivery';
import { DynamoDeliverySweepStore } from './sweep';
import { DynamoVerificationStore } from './verifications';

export class DynamoStore implements VerificationStore, ApiKeyStore, DeliveryStore, DeliverySweepStore {
  private readonly verifications: DynamoVerificationStore;
  private readonly apiKeys: DynamoApiKeyStore;
  private readonly deliveries: DynamoDeliveryStore;
  private readonly sweep: DynamoDeliverySweepStore;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.verifications = new DynamoVerificationStore(client, tableName);
    this.apiKeys = new DynamoApiKeyStore(client, tableName);
    this.deliveries = new DynamoDeliveryStore(client, tableName);
    this.sweep = new DynamoDeliverySweepStore(client, tableName);
  }

  getVerification(sid: string): Promise<Verification | undefined> {
    return this.verifications.getVerification(sid);
  }
  getNumber(e164: string): Promise<NumberRecord> {
    return this.verifications.getNumber(e164);
  }
  loadSendContext(query: SendContextQuery): Promise<SendContext> {
    return this.verifications.loadSendContext(query);
  }
  getIdempotentSid(serviceSid: string, idempotencyKey: string, now: Date): Promise<string | undefined> {
    return this.verifications.getIdempotentSid(serviceSid, idempotencyKey, now);
  }
  acceptSend(input: AcceptSend): Promise<AcceptResult> {
    return this.verifications.acceptSend(input);
  }
  recordRefusedSend(input: RecordRefusal): Promise<boolean> {
    return this.verifications.recordRefusedSend(input);
  }
  spendAttempt(sid: string, serviceSid: string, guessHash: string, now: Date): Promise<CheckWrite> {
    return this.verifications.spendAttempt(sid, serviceSid, guessHash, now);
  }
  markExpired(sid: string, now: Date): Promise<void> {
    return this.verifications.markExpired(sid, now);
  }

  countKeyRequest(request: KeyRequest): Promise<KeyRequestOutcome> {
    return this.apiKeys.countKeyRequest(request);
  }

  claimChannel(
    sid: string,
    index: number,
    claim: DeliveryAttempt,
    answered?: AnsweredAttempts,
    channel?: Channel | null,
  ): Promise<boolean> {
    return this.deliveries.claimChannel(sid, index, claim, answered, channel);
  }
  markReceiptFailed(sid: string, index: number, current: boolean): Promise<boolean> {
    return this.deliveries.markReceiptFailed(sid, index, current);
  }
  recordChannelOutcome(sid: string, index: number, attempt: DeliveryAttempt): Promise<void> {
    return this.deliveries.recordChannelOutcome(sid, index, attempt);
  }
  finishDelivery(
    sid: string,
    status: 'SENT' | 'FAILED',
    now: Date,
    answered?: AnsweredAttempts,
  ): Promise<void> {
    return this.deliveries.finishDelivery(sid, status, now, answered);
  }
  markDelivered(sid: string, channel: Channel, now: Date, answered?: AnsweredAttempts): Promise<boolean> {
    return this.deliveries.markDelivered(sid, channel, now, answered);
  }
  recordRejections(e164: string, channels: Channel[], until: Date): Promise<void> {
    return this.deliveries.recordRejections(e164, channels, until);
  }

  listAcceptedSends(spans: readonly TimeSpan[]): Promise<AcceptedSend[][]> {
    return this.sweep.listAcceptedSends(spans);
  }
  readVerifications(sids: string[]): Promise<Verification[]> {
    return this.sweep.readVerifications(sids);
  }
  getSweepCursor(): Promise<SweepCursor | undefined> {
    return this.sweep.getSweepCursor();
  }
  saveSweepCursor(next: SweepCursor, seen: SweepCursor | undefined): Promise<boolean> {
    return this.sweep.saveSweepCursor(next, seen);
  }
}
