import type { GuardDecision, GuardSettings } from './guard/model';
import type { ProviderErrorCode } from './providers';
import type { Channel } from './routing';

export type CodeStatus = 'PENDING' | 'VERIFIED' | 'EXPIRED' | 'LOCKED';
export type DeliveryStatus = 'PENDING' | 'SENT' | 'DELIVERED' | 'FAILED';

export interface Template {
  sid: string;
  /** Message text with a `{code}` placeholder. */
  body: string;
  locale: string;
}

export interface DeliveryRules {
  /** ISO 3166-1 alpha-2 countries the service never sends to. */
  blockedCountries: string[];
  /** E.164 prefixes (e.g. `+4470`) the service never sends to. */
  blockedPrefixes: string[];
  /**
   * ISO 3166-1 alpha-2 countries the service sends to; a served country not listed is refused. Absent: every
   * served country (services made before the list existed); empty: none. A blocked country stays blocked.
   */
  allowedCountries?: string[];
}

/** The guard's settings as kept on the service item, with what the owner allows callers. */
export interface ServiceGuardSettings extends GuardSettings {
  /** The owner lets a send's `RiskCheck=disable` skip the guard; absent or false: it is judged anyway. */
  riskCheckOptOut?: boolean;
}

/** The account. Balance in units of 0.0001 USD. */
export interface Service {
  sid: string;
  name: string;
  /** The whole balance, whatever number of shards it is spread over. */
  balance: number;
  /**
   * How many shards the balance is spread over, for a service busier than one item's write limit allows
   * (docs/adr/0014-sharded-balance.md); absent: 1.
   */
  balanceShards?: number;
  enabledChannels: Channel[];
  /** Counts the changes of `enabledChannels`, as `rulesVersion` counts the rules'. */
  channelsVersion?: number;
  rules: DeliveryRules;
  /**
   * Counts the changes of `rules` (every write of a rules list adds 1; absent: none yet, 0): a change made on a
   * copy of the rules read at another version is refused, rather than undoing the changes made since.
   */
  rulesVersion?: number;
  /** Per-country customer prices replacing the list price. */
  prices: Record<string, number>;
  /** The default template, held on the service so a send needs no extra read for it. */
  defaultTemplate?: Template;
  createdAt: string;
  /** SIDs of the service's webhook endpoints (details in their own items; at most 10). */
  webhookEndpoints: string[];
  /** The pumping guard's level, safe list and RiskCheck permission (absent: `DEFAULT_GUARD_SETTINGS`). */
  guard?: ServiceGuardSettings;
  /**
   * Counts the changes of the guard's level, safe list and RiskCheck permission, as `rulesVersion` counts the
   * rules' (not the caps': a change of one country's caps is made on the caps as they are).
   */
  guardVersion?: number;
  /** SMS parts a new template may take (an operator's setting); absent: the default (core/accounts/formats.ts). */
  templateSmsParts?: number;
  /** Active API keys the service may hold (an operator's setting); absent: the default (core/accounts/formats.ts). */
  apiKeyLimit?: number;
  /**
   * Its API keys not revoked, counted on the service item as keys are issued and revoked; absent on a service made
   * before the count, until its next key change counts its keys' items.
   */
  activeApiKeys?: number;
  /** Its templates, counted as `activeApiKeys` is (templates are bounded per service: accounts core). */
  templateCount?: number;
}

/** `sending`: a task claimed the channel and is handing the message over (or died doing so). */
type DeliveryOutcome = 'sending' | 'accepted' | 'rejected' | 'failed';

/** One channel tried by the delivery workflow. */
export interface DeliveryAttempt {
  channel: Channel;
  outcome: DeliveryOutcome;
  messageId?: string;
  reason?: string;
  /**
   * With a provider error (`failed`): its code, as the `ProviderErrors` metric counts it, so the timeline says
   * which kind of error the provider's own words in `reason` are (`access_denied`: the role's grant).
   */
  errorCode?: ProviderErrorCode;
  /** Nothing was handed to the provider: the code's remaining life was below the channel's minimum. */
  skipped?: true;
  at: string;
}

/**
 * A provider's acceptance of channel `channelIndex`'s message, not written on its own: the delivery workflow
 * carries it until the next write it makes anyway (the next channel's claim, the end of delivery) records it,
 * or a receipt records its own message id first. A write saved on every delivery; a message id is lost only when
 * the deliver task's output is (its run dies after sending, or Step Functions retries it) or the execution dies
 * before that write, and then the channel stays `sending`, which counts as carried.
 */
export interface ChannelAnswer {
  channelIndex: number;
  messageId: string;
}

export interface Verification {
  sid: string;
  serviceSid: string;
  to: string;
  /**
   * ISO country of `to`, decided at send (absent on items written before it was kept): the delivery picks a
   * provider per country without parsing the number again (libphonenumber stays out of the delivery bundles).
   */
  country?: string;
  /** Status as stored; read it through `effectiveStatus`, which derives EXPIRED and LOCKED. */
  status: CodeStatus;
  deliveryStatus: DeliveryStatus;
  channel: Channel | null;
  /** Price of this send in units of 0.0001 USD. */
  price: number;
  attemptsRemaining: number;
  expiresAt: string;
  dateCreated: string;
  /** True for a caller-supplied `Code`: delivered, never checked by the service. */
  clientCode: boolean;
  /** HMAC of the code; absent for caller-supplied codes, which are never checked. */
  codeHash?: string;
  /**
   * HMAC of the last guess that spent an attempt. A check spends first and compares second: the code is
   * VERIFIED when this equals `codeHash` (see `settledStatus`), decided by the same write that spent the attempt.
   */
  lastGuessHash?: string;
  /** The code encrypted for delivery and channel fallback; removed when delivery ends. */
  sealedCode?: string;
  /** Template text the code is rendered into. */
  message: string;
  /** Channels the workflow tries, cheapest first. */
  channels: Channel[];
  /** Outcome per channel index, written once by the delivery workflow. */
  deliveries: Record<string, DeliveryAttempt>;
  /**
   * Channel indexes a failure receipt came for while delivery ran: such a channel accepted the message but did
   * not carry it, so delivery ends FAILED when every channel tried failed one way or another. Kept apart from
   * `deliveries`, whose entries the workflow writes whole (an accepted answer would overwrite a mark there).
   */
  failedReceipts?: number[];
  /** The pumping guard's decision when, at level shadow, it would have refused this send. */
  guard?: GuardDecision;
  /**
   * The guard did not judge this send (`RiskCheck=disable` where allowed, or a safe-listed number): it feeds
   * none of the guard's signals, so such traffic can neither teach the guard nor set off a block.
   */
  guardExempt?: boolean;
  /**
   * The service had a webhook endpoint (enabled or not) when the code was sent: the table's stream brings this
   * verification's changes to the webhook events function, which posts them to the endpoints enabled then. Absent:
   * its changes never reach that function (docs/webhooks.md). Stored only, never in an answer.
   */
  webhooks?: true;
}

/** Per-number send log and channel rejections, shared by every service. */
export interface NumberRecord {
  e164: string;
  /** Epoch milliseconds of recent sends (accepted and refused), oldest first. */
  sends: number[];
  /**
   * Per channel, epoch milliseconds until which that channel is known to reject the number (it rejected it
   * within `unreachableDays`). A send is refused with `unreachable` only when every channel of its plan has.
   */
  rejectedUntil: Partial<Record<Channel, number>>;
  /**
   * Per service SID, its last accepted sends to the number (newest first, at most `KNOWN_NUMBER.recent`): the
   * verifications a guard refusal reads to tell a returning user (core/guard/known.ts).
   */
  recent?: Record<string, { sid: string; at: number }[]>;
  /** Optimistic-concurrency version; 0 when the item does not exist yet. */
  version: number;
}

export interface ApiKeyRecord {
  keyHash: string;
  serviceSid: string;
  createdAt: string;
  revokedAt?: string;
}
