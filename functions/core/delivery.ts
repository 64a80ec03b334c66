import { receiptWaitSteps } from './delivery-time';
import { renderMessage } from './message';
import { METRIC, deliveryDimensions, noMetrics, type Metrics } from './metrics';
import type { ChannelAnswer, DeliveryAttempt, DeliveryStatus, Verification } from './model';
import type { AnsweredAttempts, Clock, CodeVault, DeliveryStore } from './ports';
import {
  ProviderError,
  messageReference,
  parseMessageReference,
  type ProviderRegistry,
  type Receipt,
  type ReceiptRequest,
} from './providers';
import type { Channel } from './routing';
import type { Settings } from './settings';
import { effectiveStatus } from './verification';

/**
 * The state machine's tasks. Their input and output carry the verification SID and a channel index only:
 * the code is read, encrypted, from the record, so it never enters the workflow's input or history.
 * Step Functions Express runs a task at least once, so each task is idempotent.
 */
export interface DeliveryTaskInput {
  sid: string;
  channelIndex: number;
  waitSeconds: number;
  /**
   * Providers' acceptances not yet on the record (`ChannelAnswer`): the next write the workflow makes records
   * them. Absent in a workflow's first input; every task's output has it, so the state machine can pass it on.
   */
  answers?: ChannelAnswer[];
}

export interface DeliveryTaskOutput extends DeliveryTaskInput {
  /** `wait`: a channel accepted, wait for its receipt. `deliver`: try `channelIndex` now. `end`: stop. */
  next: 'wait' | 'deliver' | 'end';
  /** With `end`: how delivery ended, for logs and alarms. */
  deliveryStatus?: DeliveryStatus;
  /**
   * With `wait`: the channel wait in steps, seconds (`receiptWaitSteps`): the state machine reads the delivery
   * status after each step but the last, and ends when a receipt settled it.
   */
  waits?: number[];
}

export interface DeliveryDeps {
  store: DeliveryStore;
  providers: ProviderRegistry;
  vault: CodeVault;
  clock: Clock;
  settings: Settings;
  /** Deliveries by channel and outcome, fallbacks, receipt latency, failed deliveries; none when absent. */
  metrics?: Metrics;
  /** Waits between re-reads of a verification not written yet (`readOnceWritten`); real timers when absent. */
  pause?: (ms: number) => Promise<void>;
}

/**
 * Pauses before each re-read of a verification the first task did not find, ms (1.26 s in all). The send starts
 * the workflow beside its accepting transaction, so the first task can read before the transaction is visible;
 * past these, the transaction was refused (the send decided again under another SID) or was so slow that the
 * sweeper's restart of a delivery that never started takes over.
 */
export const NOT_YET_WRITTEN_PAUSES_MS = [20, 40, 80, 160, 320, 640];

const realPause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function readOnceWritten(deps: DeliveryDeps, sid: string): Promise<Verification | undefined> {
  let verification = await deps.store.getVerification(sid);
  for (const ms of NOT_YET_WRITTEN_PAUSES_MS) {
    if (verification) break;
    await (deps.pause ?? realPause)(ms);
    verification = await deps.store.getVerification(sid);
  }
  return verification;
}

/** Task 1: hand the message to channel `channelIndex`, once. */
export async function deliverOverChannel(
  deps: DeliveryDeps,
  input: DeliveryTaskInput,
): Promise<DeliveryTaskOutput> {
  // On a cold start the key read runs beside this read, and ends before the claim: a run that cannot get its keys
  // fails (and is retried) before it claims the channel, not after.
  const [verification] = await Promise.all([readOnceWritten(deps, input.sid), deps.vault.ready?.()]);
  if (!verification || verification.deliveryStatus !== 'PENDING') return ended(input, verification);
  const channel = verification.channels[input.channelIndex];
  // No more channels, or the code was already used, locked or expired: another message would be wasted money.
  if (!channel || effectiveStatus(verification, deps.clock.now()) !== 'PENDING') {
    return finish(deps, verification, input);
  }

  const attempt = verification.deliveries[String(input.channelIndex)];
  if (!attempt) {
    // `channel` names the channel the message was handed to. It is written as channels[0] at send; when the
    // channels before this one were all skipped (nothing sent), this claim or skip corrects it.
    const noneHandedBefore = verification.channels
      .slice(0, input.channelIndex)
      .every((_, index) => verification.deliveries[String(index)]?.skipped === true);
    const minimum = minimumLifeSeconds(deps, channel, verification.country);
    const remaining = Math.floor((Date.parse(verification.expiresAt) - deps.clock.now().getTime()) / 1000);
    if (remaining < minimum) {
      const skip: DeliveryAttempt = {
        channel,
        outcome: 'failed',
        reason: `skipped: the code expires in ${remaining} s, below the channel's ${minimum} s minimum`,
        skipped: true,
        at: deps.clock.now().toISOString(),
      };
      const answered = answeredAttempts(verification, input.answers);
      if (
        !(await deps.store.claimChannel(
          input.sid,
          input.channelIndex,
          skip,
          answered,
          noneHandedBefore ? null : undefined,
        ))
      )
        return waitForReceipt(input, []);
      (deps.metrics ?? noMetrics).count(METRIC.deliveries, deliveryDimensions(channel, 'failed'));
      return nextChannel(deps, verification, { ...input, answers: [] });
    }
    // Claim the channel before calling its provider, so that a task or an execution run twice (Express runs
    // both at least once) sends one message, not two. A run that dies after its claim leaves the channel
    // `sending`: it is waited on like an accepted one and the workflow moves on after the wait. The claim
    // also records the answer the workflow carried from the channel before.
    const claim: DeliveryAttempt = { channel, outcome: 'sending', at: deps.clock.now().toISOString() };
    const answered = answeredAttempts(verification, input.answers);
    // Channels are tried from 0: the claim of channel 0 is the delivery's first, whose time sets the deadline
    // by which it must be settled (after it, the sweeper settles it; see core/delivery-time.ts).
    const correctChannel = input.channelIndex > 0 && noneHandedBefore ? channel : undefined;
    if (!(await deps.store.claimChannel(input.sid, input.channelIndex, claim, answered, correctChannel))) {
      return waitForReceipt(input, []);
    }
    const sent = await sendOnce(deps, verification, input.channelIndex);
    (deps.metrics ?? noMetrics).count(METRIC.deliveries, deliveryDimensions(channel, sent.outcome));
    if (sent.outcome === 'accepted') {
      // Not written now: the receipt's write, the next channel's claim or the end records it (ChannelAnswer).
      return waitForReceipt(input, [{ channelIndex: input.channelIndex, messageId: sent.messageId ?? '' }]);
    }
    // A refusal or failure is written at once: the end of delivery and `unreachable` read it from the record.
    await deps.store.recordChannelOutcome(input.sid, input.channelIndex, sent);
    return nextChannel(deps, verification, { ...input, answers: [] });
  }
  if (attempt.outcome === 'accepted' || attempt.outcome === 'sending') return waitForReceipt(input, []);
  return nextChannel(deps, verification, input);
}

/** The channel's provider's floor on the code's remaining life (0 when it has none, or none is configured). */
function minimumLifeSeconds(deps: DeliveryDeps, channel: Channel, country: string | undefined): number {
  try {
    return deps.providers.forChannel(channel, country).minimumLifeSeconds?.(channel) ?? 0;
  } catch {
    // No provider for the channel: sendOnce fails it as it always has.
    return 0;
  }
}

const waitForReceipt = (input: DeliveryTaskInput, answers: ChannelAnswer[]): DeliveryTaskOutput => ({
  sid: input.sid,
  channelIndex: input.channelIndex,
  waitSeconds: input.waitSeconds,
  answers,
  next: 'wait',
  waits: receiptWaitSteps(input.waitSeconds),
});

/**
 * The carried answers as whole attempts to write, for the channels the record still holds as claimed: one a
 * receipt already recorded, or any entry the workflow could not have produced, is left as it is.
 */
function answeredAttempts(verification: Verification, answers: unknown): AnsweredAttempts {
  const attempts: AnsweredAttempts = {};
  if (!Array.isArray(answers)) return attempts;
  for (const answer of answers as Partial<ChannelAnswer>[]) {
    const { channelIndex, messageId } = answer ?? {};
    if (!Number.isInteger(channelIndex) || typeof messageId !== 'string' || messageId === '') continue;
    const claimed = verification.deliveries[String(channelIndex)];
    if (claimed?.outcome !== 'sending') continue;
    attempts[String(channelIndex)] = { ...claimed, outcome: 'accepted', messageId };
  }
  return attempts;
}

/** Task 2, after the wait: a receipt ends delivery; otherwise the next channel, or the end. */
export async function afterReceiptWait(
  deps: DeliveryDeps,
  input: DeliveryTaskInput,
): Promise<DeliveryTaskOutput> {
  const verification = await deps.store.getVerification(input.sid);
  if (!verification || verification.deliveryStatus !== 'PENDING') return ended(input, verification);
  return nextChannel(deps, verification, input);
}

export type ReceiptResult = 'applied' | 'duplicate' | 'unknown' | 'invalid';

/** A provider's callback. Believed only when signed; duplicates and late or out-of-order receipts are harmless. */
export async function acceptReceipt(
  deps: Pick<DeliveryDeps, 'store' | 'providers' | 'clock' | 'metrics'>,
  providerName: string,
  request: ReceiptRequest,
): Promise<ReceiptResult> {
  const provider = deps.providers.byName(providerName);
  const receipt = await provider?.parseReceipt(request, deps.clock.now());
  if (!receipt) return 'invalid';
  return acceptProviderReceipt(deps, providerName, receipt);
}

/**
 * A receipt already authenticated by how it came in: a signed callback (acceptReceipt), or an event that only
 * the provider's own service can deliver (AWS: an SNS topic, functions/receipts/). The
 * same forward-only rules apply to both.
 */
export async function acceptProviderReceipt(
  deps: Pick<DeliveryDeps, 'store' | 'providers' | 'clock' | 'metrics'>,
  providerName: string,
  receipt: Receipt,
): Promise<ReceiptResult> {
  const reference = parseMessageReference(receipt.reference);
  if (!reference) return 'unknown';
  const verification = await deps.store.getVerification(reference.sid);
  if (!verification) return 'unknown';
  // Receipts only move a delivery forward: one for an attempt that was never made (no claim on that channel)
  // is ignored, however well signed.
  const attempt = verification.deliveries[String(reference.channelIndex)];
  if (!attempt) return 'unknown';
  const channel = attempt.channel;
  // The receipt must name the message this provider accepted for that channel, once that answer is recorded.
  // Until then (the answer rides the workflow's next write, ChannelAnswer) the channel holds only its claim,
  // and the receipt is believed when signed by that channel's provider for a reference only the service hands
  // out (SID and channel index): dropping it would make the workflow send the code again on the next channel.
  const known =
    attempt.outcome !== 'sending'
      ? attempt.messageId === receipt.messageId && attempt.outcome === 'accepted'
      : deps.providers.forChannel(channel, verification.country).name === providerName;
  if (!known) return 'unknown';
  // A failure receipt ends the channel's wait: the state machine's next status read sees the mark and moves to
  // the next channel at once. A later delivered receipt for the same attempt still settles it. One for a channel
  // the workflow has moved past (a later one is claimed) is recorded without the mark, which names the channel
  // being waited on: moved back, the mark would hide that channel's own failure and hold it for the whole wait.
  if (receipt.status !== 'delivered') {
    const current = !verification.deliveries[String(reference.channelIndex + 1)];
    return (await deps.store.markReceiptFailed(verification.sid, reference.channelIndex, current))
      ? 'applied'
      : 'duplicate';
  }
  const now = deps.clock.now();
  // A channel still `sending` gets the receipt's message id in the same write (the workflow may never record it).
  const answered = answeredAttempts(verification, [
    { channelIndex: reference.channelIndex, messageId: receipt.messageId },
  ]);
  if (!(await deps.store.markDelivered(verification.sid, channel, now, answered))) return 'duplicate';
  const metrics = deps.metrics ?? noMetrics;
  metrics.count(METRIC.deliveries, deliveryDimensions(channel, 'delivered'));
  // From the channel's claim, made just before its provider was called, to the receipt.
  const sentAt = Date.parse(attempt.at);
  if (Number.isFinite(sentAt)) metrics.timing(METRIC.receiptLatency, now.getTime() - sentAt, { channel });
  return 'applied';
}

async function sendOnce(
  deps: DeliveryDeps,
  verification: Verification,
  channelIndex: number,
): Promise<DeliveryAttempt & { outcome: 'accepted' | 'rejected' | 'failed' }> {
  const channel = verification.channels[channelIndex]!;
  const at = deps.clock.now().toISOString();
  if (!verification.sealedCode) return { channel, outcome: 'failed', reason: 'code no longer held', at };
  const code = deps.vault.open(verification.sid, verification.sealedCode);
  try {
    const answer = await deps.providers.forChannel(channel, verification.country).send({
      channel,
      to: verification.to,
      body: renderMessage(verification.message, code),
      code,
      ...(verification.country !== undefined && { country: verification.country }),
      reference: messageReference(verification.sid, channelIndex),
      expiresAt: verification.expiresAt,
    });
    return answer.status === 'accepted'
      ? { channel, outcome: 'accepted', messageId: answer.messageId, at }
      : { channel, outcome: 'rejected', reason: answer.reason, at };
  } catch (error) {
    // A provider error or time-out moves delivery to the next channel, like a rejection; but it says nothing
    // about the number, so it does not count towards `unreachable`. Its code is counted: some (the SMS sandbox,
    // a grant on the wrong ARN) fail every send until the operator acts.
    const errorCode = error instanceof ProviderError ? error.code : 'provider_error';
    (deps.metrics ?? noMetrics).count(METRIC.providerErrors, { code: errorCode });
    return {
      channel,
      outcome: 'failed',
      reason: error instanceof Error ? error.message : 'provider error',
      errorCode,
      at,
    };
  }
}

async function nextChannel(
  deps: DeliveryDeps,
  verification: Verification,
  input: DeliveryTaskInput,
): Promise<DeliveryTaskOutput> {
  const next = input.channelIndex + 1;
  const codeStillUsable = effectiveStatus(verification, deps.clock.now()) === 'PENDING';
  if (codeStillUsable && next < verification.channels.length) {
    const from = verification.channels[input.channelIndex];
    if (from) (deps.metrics ?? noMetrics).count(METRIC.fallbacks, { channel: from });
    return { ...input, channelIndex: next, next: 'deliver' };
  }
  const latest = (await deps.store.getVerification(verification.sid)) ?? verification;
  return finish(deps, latest, input);
}

/**
 * Every channel was tried. SENT when some channel accepted the message and no failure receipt came for it (a late
 * receipt may still come), FAILED when none did. Each channel that rejected the number is left out of its plans
 * for `unreachableDays`; when every channel of a plan has, sends to it are refused with `unreachable`.
 */
async function finish(
  deps: DeliveryDeps,
  verification: Verification,
  input: DeliveryTaskInput,
): Promise<DeliveryTaskOutput> {
  const attempts = verification.channels.map((_, index) => verification.deliveries[String(index)]);
  const failedReceipts = new Set(verification.failedReceipts ?? []);
  // A channel left `sending` by a run that died may have carried the message: count it as sent. One whose
  // provider reported it undelivered did not carry it.
  const carried = (attempt: DeliveryAttempt | undefined, index: number) =>
    (attempt?.outcome === 'accepted' || attempt?.outcome === 'sending') && !failedReceipts.has(index);
  const status = attempts.some(carried) ? 'SENT' : 'FAILED';
  await deps.store.finishDelivery(
    verification.sid,
    status,
    deps.clock.now(),
    answeredAttempts(verification, input.answers),
  );
  const metrics = deps.metrics ?? noMetrics;
  metrics.count(METRIC.deliveriesEnded, { status });
  if (status === 'FAILED') metrics.count(METRIC.deliveriesFailed);
  // Each channel that rejected the number is remembered on the number, per channel, for every service.
  const rejected = attempts.flatMap((attempt) => (attempt?.outcome === 'rejected' ? [attempt.channel] : []));
  if (rejected.length > 0) {
    const until = new Date(deps.clock.now().getTime() + deps.settings.unreachableDays * 86_400_000);
    await deps.store.recordRejections(verification.to, rejected, until);
  }
  return { ...input, next: 'end', deliveryStatus: status };
}

const ended = (input: DeliveryTaskInput, verification: Verification | undefined): DeliveryTaskOutput => ({
  ...input,
  next: 'end',
  ...(verification && { deliveryStatus: verification.deliveryStatus }),
});

/**
 * The settling step: ends a delivery from what the record holds, SENT or FAILED by the same rule as the last
 * channel's end (`finish`). The state machine's `Catch` runs it when a task still fails after its retries
 * (input `settle: true`, see `afterWaitOrSettle`); the sweeper settles a delivery claimed long ago and never
 * ended the same way (`settlePendingDelivery`). It trusts the SID only: nothing of the failed task's error
 * reaches it, and the outcome comes from the record.
 */
export async function settleDelivery(
  deps: DeliveryDeps,
  input: DeliveryTaskInput,
): Promise<DeliveryTaskOutput> {
  const clean: DeliveryTaskInput = {
    sid: input.sid,
    channelIndex: input.channelIndex,
    waitSeconds: input.waitSeconds,
  };
  const verification = await deps.store.getVerification(input.sid);
  if (!verification || verification.deliveryStatus !== 'PENDING') return ended(clean, verification);
  return finish(deps, verification, clean);
}

/** Settles a delivery the caller read as PENDING (the sweeper): SENT or FAILED, as `finish` decides. */
export function settlePendingDelivery(
  deps: DeliveryDeps,
  verification: Verification,
  input: DeliveryTaskInput,
): Promise<DeliveryTaskOutput> {
  return finish(deps, verification, input);
}

/** Input of the AfterWait function: `settle: true` when the state machine's `Catch` calls it. */
export interface AfterWaitTaskInput extends DeliveryTaskInput {
  settle?: boolean;
}

/**
 * The AfterWait function's two uses: after a receipt wait, and the settling step of the state machine's
 * `Catch` (one function for both, so no extra Lambda, role or cold start).
 */
export function afterWaitOrSettle(
  deps: DeliveryDeps,
  input: AfterWaitTaskInput,
): Promise<DeliveryTaskOutput> {
  return input.settle === true ? settleDelivery(deps, input) : afterReceiptWait(deps, input);
}
