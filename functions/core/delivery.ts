import type { DeliveryAttempt, DeliveryStatus, Verification } from './model';
import type { Clock, CodeVault, DeliveryStore } from './ports';
import {
  messageReference,
  parseMessageReference,
  type ProviderRegistry,
  type ReceiptRequest,
} from './providers';
import type { Settings } from './settings';
import { effectiveStatus, renderMessage } from './verification';

/**
 * The state machine's tasks. Their input and output carry the verification SID and a channel index only:
 * the code is read, encrypted, from the record, so it never enters the workflow's input or history.
 * Step Functions Express runs a task at least once, so each task is idempotent.
 */
export interface DeliveryTaskInput {
  sid: string;
  channelIndex: number;
  waitSeconds: number;
}

export interface DeliveryTaskOutput extends DeliveryTaskInput {
  /** `wait`: a channel accepted, wait for its receipt. `deliver`: try `channelIndex` now. `end`: stop. */
  next: 'wait' | 'deliver' | 'end';
  /** With `end`: how delivery ended, for logs and alarms. */
  deliveryStatus?: DeliveryStatus;
}

export interface DeliveryDeps {
  store: DeliveryStore;
  providers: ProviderRegistry;
  vault: CodeVault;
  clock: Clock;
  settings: Settings;
}

/** Task 1: hand the message to channel `channelIndex`, once. */
export async function deliverOverChannel(
  deps: DeliveryDeps,
  input: DeliveryTaskInput,
): Promise<DeliveryTaskOutput> {
  const verification = await deps.store.getVerification(input.sid);
  if (!verification || verification.deliveryStatus !== 'PENDING') return ended(input, verification);
  const channel = verification.channels[input.channelIndex];
  // No more channels, or the code was already used, locked or expired: another message would be wasted money.
  if (!channel || effectiveStatus(verification, deps.clock.now()) !== 'PENDING') {
    return finish(deps, verification, input);
  }

  let attempt = verification.deliveries[String(input.channelIndex)];
  if (!attempt) {
    // Claim the channel before calling its provider, so that a task or an execution run twice (Express runs
    // both at least once) sends one message, not two. A run that dies after its claim leaves the channel
    // `sending`: it is waited on like an accepted one and the workflow moves on after the wait.
    const claim: DeliveryAttempt = { channel, outcome: 'sending', at: deps.clock.now().toISOString() };
    if (!(await deps.store.claimChannel(input.sid, input.channelIndex, claim)))
      return { ...input, next: 'wait' };
    attempt = await sendOnce(deps, verification, input.channelIndex);
    await deps.store.recordChannelOutcome(input.sid, input.channelIndex, attempt);
  }
  if (attempt.outcome === 'accepted' || attempt.outcome === 'sending') return { ...input, next: 'wait' };
  return nextChannel(deps, verification, input);
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
  deps: Pick<DeliveryDeps, 'store' | 'providers' | 'clock'>,
  providerName: string,
  request: ReceiptRequest,
): Promise<ReceiptResult> {
  const provider = deps.providers.byName(providerName);
  const receipt = provider?.parseReceipt(request, deps.clock.now());
  if (!receipt) return 'invalid';
  const reference = parseMessageReference(receipt.reference);
  if (!reference) return 'unknown';
  const verification = await deps.store.getVerification(reference.sid);
  if (!verification) return 'unknown';
  const attempt = verification.deliveries[String(reference.channelIndex)];
  const channel = attempt?.channel ?? verification.channels[reference.channelIndex];
  if (!channel) return 'unknown';
  // The receipt must name the message this provider accepted for that channel. With no answer recorded yet
  // (only the claim, or nothing), it beat the deliver task's write of the provider's answer: it is believed
  // when signed by that channel's provider for a reference only the service hands out (SID and channel
  // index). Dropping it made the workflow send the code again on the next channel.
  const known =
    attempt && attempt.outcome !== 'sending'
      ? attempt.messageId === receipt.messageId && attempt.outcome === 'accepted'
      : deps.providers.forChannel(channel).name === providerName;
  if (!known) return 'unknown';
  // A failure receipt changes nothing: the workflow moves on after the wait anyway.
  if (receipt.status !== 'delivered') return 'duplicate';
  return (await deps.store.markDelivered(verification.sid, channel, deps.clock.now()))
    ? 'applied'
    : 'duplicate';
}

async function sendOnce(
  deps: DeliveryDeps,
  verification: Verification,
  channelIndex: number,
): Promise<DeliveryAttempt> {
  const channel = verification.channels[channelIndex]!;
  const at = deps.clock.now().toISOString();
  if (!verification.sealedCode) return { channel, outcome: 'failed', reason: 'code no longer held', at };
  const code = deps.vault.open(verification.sid, verification.sealedCode);
  try {
    const answer = await deps.providers.forChannel(channel).send({
      channel,
      to: verification.to,
      body: renderMessage(verification.message, code),
      reference: messageReference(verification.sid, channelIndex),
    });
    return answer.status === 'accepted'
      ? { channel, outcome: 'accepted', messageId: answer.messageId, at }
      : { channel, outcome: 'rejected', reason: answer.reason, at };
  } catch (error) {
    // A provider error or time-out moves delivery to the next channel, like a rejection; but it says nothing
    // about the number, so it does not count towards `unreachable`.
    return {
      channel,
      outcome: 'failed',
      reason: error instanceof Error ? error.message : 'provider error',
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
  if (codeStillUsable && next < verification.channels.length)
    return { ...input, channelIndex: next, next: 'deliver' };
  const latest = (await deps.store.getVerification(verification.sid)) ?? verification;
  return finish(deps, latest, input);
}

/**
 * Every channel was tried. SENT when some channel accepted the message (a late receipt may still come),
 * FAILED when none did; when every channel rejected the number, it is refused for `unreachableDays`.
 */
async function finish(
  deps: DeliveryDeps,
  verification: Verification,
  input: DeliveryTaskInput,
): Promise<DeliveryTaskOutput> {
  const attempts = verification.channels.map((_, index) => verification.deliveries[String(index)]);
  // A channel left `sending` by a run that died may have carried the message: count it as sent.
  const carried = (outcome: string | undefined) => outcome === 'accepted' || outcome === 'sending';
  const status = attempts.some((attempt) => carried(attempt?.outcome)) ? 'SENT' : 'FAILED';
  await deps.store.finishDelivery(verification.sid, status, deps.clock.now());
  if (attempts.length > 0 && attempts.every((attempt) => attempt?.outcome === 'rejected')) {
    const until = new Date(deps.clock.now().getTime() + deps.settings.unreachableDays * 86_400_000);
    await deps.store.markUnreachable(verification.to, until);
  }
  return { ...input, next: 'end', deliveryStatus: status };
}

const ended = (input: DeliveryTaskInput, verification: Verification | undefined): DeliveryTaskOutput => ({
  ...input,
  next: 'end',
  ...(verification && { deliveryStatus: verification.deliveryStatus }),
});
