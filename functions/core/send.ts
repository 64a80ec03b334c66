import { OtpError } from './errors';
import { DEFAULT_GUARD_SETTINGS, blockedMessage, type GuardDecision } from './guard/model';
import { knownFrom, recentAfter, recentSids } from './guard/known';
import { guardVerdict } from './guard/verdict';
import type { NumberRecord, Service, Template, Verification } from './model';
import { parsePhone, phoneProblem, type PhoneNumber } from './phone';
import type { Clock, CodeVault, DeliveryWorkflow, Random, SendContext, VerificationStore } from './ports';
import { ROUTES, planRoute, type Channel } from './routing';
import type { Settings } from './settings';
import { toView, type VerificationView } from './verification';

export interface SendRequest {
  serviceSid: string;
  /** As the caller sent it; validated for presence and length by the HTTP layer. */
  to: string;
  templateSid?: string;
  /** Caller-supplied code, already checked to be 4 to 10 letters or digits. */
  code?: string;
  idempotencyKey?: string;
  /**
   * `RiskCheck=disable`: the pumping guard does not judge this send, if the service's owner allows it
   * (`guard.riskCheckOptOut`); otherwise the send is judged as if RiskCheck were absent.
   */
  riskCheckDisabled?: boolean;
  /**
   * Settles when the caller's authentication has: the send reads beside it and writes nothing before it
   * (the HTTP layer's API-key write runs in parallel with the first read). Absent: already authenticated.
   */
  authorized?: Promise<void>;
  /**
   * Milliseconds left before the caller must be answered (the function's remaining time, less a margin). A charge
   * is written only with time left to learn whether it stands: an answer cut off by a time-out after it would
   * leave the caller a 5xx for a charged send, and its retry charged again. Unbounded if absent.
   */
  timeLeftMs?: () => number;
}

export interface SendDeps {
  store: VerificationStore;
  workflow: DeliveryWorkflow;
  vault: CodeVault;
  random: Random;
  clock: Clock;
  settings: Settings;
  /** Channels this deployment may use at all (`OTP_ALLOWED_CHANNELS`); a service enables a subset. */
  allowedChannels: readonly Channel[];
}

export interface SendResult {
  verification: VerificationView;
  /** True when an `Idempotency-Key` replayed an earlier accepted send: nothing sent, nothing charged. */
  replayed: boolean;
  /** False when the delivery workflow could not be started now; the sweeper will start it. */
  deliveryStarted: boolean;
}

/** Conflicting writes (other sends to the same number at the same moment) are decided again this often. */
const MAX_DECISIONS = 25;

/** `HJ…` SIDs belong to another provider's template format; the API ignores them. */
const FOREIGN_TEMPLATE_PREFIX = 'HJ';

export async function sendVerification(deps: SendDeps, request: SendRequest): Promise<SendResult> {
  const { store } = deps;
  const phone = parsePhone(request.to);
  const templateSid =
    request.templateSid && !request.templateSid.startsWith(FOREIGN_TEMPLATE_PREFIX)
      ? request.templateSid
      : undefined;

  if (!phone) {
    // An unparseable number is refused before anything is read, unless the key replays an accepted send.
    const replayed = await replayAcceptedSend(deps, request);
    if (replayed) return replayed;
    throw new OtpError('unroutable', phoneProblem(request.to));
  }

  const query = {
    serviceSid: request.serviceSid,
    templateSid,
    idempotencyKey: request.idempotencyKey,
    e164: phone.e164,
    country: phone.country,
  };
  // The first read may miss the last second's writes (half the read units). What it lets through is either held
  // by the accepting transaction's conditions (the balance, the number's log version, the Idempotency-Key) or
  // account settings, where a second's lag is harmless; what it refuses is read again up to date before the
  // refusal stands or counts, so a top-up, a new template or a new service is never refused for being recent.
  // The read runs beside the caller's authentication (and, on a cold start, the vault's key read); nothing is
  // written or answered before all are done.
  let [, context] = await Promise.all([
    request.authorized,
    store.loadSendContext({ ...query, latest: false, now: deps.clock.now() }),
    deps.vault.ready?.(),
  ]);
  // A guard block: the read that confirms it (or decides again) also reads the service's last sends to the number,
  // whose checked code makes it a known number (core/guard/known.ts). At shadow, a send such a block would refuse
  // reads them too (a read more, on those sends only), so that its record says what standard would do.
  const knownSids = (verdict: Verdict) =>
    verdict.guard && (verdict.guard.mode !== 'shadow' || (verdict.ok && verdict.unlessKnown))
      ? recentSids(context.number, request.serviceSid)
      : undefined;
  let readLatest = false;
  const readAgain = async (verificationSids?: string[]) => {
    readLatest = true;
    return store.loadSendContext({
      ...query,
      latest: true,
      now: deps.clock.now(),
      ...(verificationSids?.length && { verificationSids }),
    });
  };

  for (let decision = 0; decision < MAX_DECISIONS; decision++) {
    if (context.idempotentSid) return replay(deps, context.idempotentSid);
    const now = deps.clock.now();
    const verdict = decide(deps, context, phone, templateSid, now, request.riskCheckDisabled === true);
    const numberSends = appendSend(deps.settings, context.number, now);

    if (verdict.ok && verdict.unlessKnown && !readLatest) {
      const sids = knownSids(verdict);
      if (sids?.length) {
        context = await readAgain(sids);
        continue;
      }
    }
    if (!verdict.ok) {
      if (!readLatest) {
        context = await readAgain(knownSids(verdict));
        continue;
      }
      if (verdict.counted) {
        const recorded = await store.recordRefusedSend({
          number: context.number,
          numberSends,
          now,
          ...(verdict.guard && {
            guard: {
              ...verdict.guard,
              serviceSid: request.serviceSid,
              country: phone.country,
              // As its accepted twin's event says: the guard never sees such a code checked.
              ...(request.code !== undefined && { callerCode: true as const }),
            },
          }),
        });
        if (!recorded) {
          context = { ...context, number: await store.getNumber(phone.e164) };
          continue;
        }
      }
      throw verdict.error;
    }

    const verification = newVerification(deps, request, phone, verdict, now);
    // The send is accepted and charged: a start that fails, or is not answered in the time left, is answered 201
    // all the same, and the sweeper starts its delivery once the send is 30 s old (it finds the send by its charge
    // line, written in the transaction).
    const startDelivery = () =>
      withinTimeLeft(
        deps.workflow.start({ sid: verification.sid, waitSeconds: deps.settings.channelWaitSeconds }).then(
          () => true,
          () => false,
        ),
        request.timeLeftMs,
      );
    // The first decision starts the workflow beside its accepting transaction, not after it: one round trip
    // less on the send. Its first task reads the record again until the transaction is visible; if the
    // transaction is refused, that execution finds nothing and ends (core/delivery.ts). After a refused
    // transaction the start waits for the write, so contention cannot start more than one execution in vain.
    const accepting = store.acceptSend({
      verification,
      idempotencyKey: request.idempotencyKey,
      number: context.number,
      numberSends,
      numberRecent: recentAfter(context.number, request.serviceSid, verification.sid, now.getTime()),
      now,
      ...(context.service?.balanceShards && { balanceShards: context.service.balanceShards }),
      ...(request.timeLeftMs && { timeLeftMs: request.timeLeftMs }),
    });
    const startingBeside = decision === 0 ? startDelivery() : undefined;
    const accepted = await accepting;
    if (accepted.ok) {
      const deliveryStarted = await (startingBeside ?? startDelivery());
      return { verification: toView(verification, now), replayed: false, deliveryStarted };
    }
    if (accepted.reason === 'insufficient_funds' && context.service) {
      // The balance fell below the price after it was read: decide again knowing that, so the refusal is
      // counted against the number like any other.
      // The transaction read every shard before it said so.
      const { balanceUnread: _readNow, ...read } = context;
      context = {
        ...read,
        service: { ...context.service, balance: Math.min(context.service.balance, verdict.price - 1) },
      };
      continue;
    }
    // Only the balance shard was busy: nothing read changed; the next decision's new SID draws on another shard.
    if (accepted.reason === 'balance_busy') continue;
    if (accepted.reason === 'no_time') {
      throw new OtpError(
        'service_unavailable',
        'The service is answering slowly; nothing was charged. Retry shortly.',
      );
    }
    // Another send changed what was read (same number or same key): read again and decide again.
    context = await readAgain(knownSids(verdict));
  }
  throw new OtpError('service_unavailable', 'Too many simultaneous sends to this number; retry shortly.');
}

/** `started`, or false once `timeLeftMs` has run out first. */
function withinTimeLeft(started: Promise<boolean>, timeLeftMs: (() => number) | undefined): Promise<boolean> {
  if (!timeLeftMs) return started;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, timeLeftMs()));
  });
  return Promise.race([started, timeUp]).finally(() => clearTimeout(timer));
}

type Verdict =
  | {
      ok: true;
      template: Template;
      channels: Verification['channels'];
      price: number;
      /** The guard at level shadow would have refused it. */
      guard?: GuardDecision;
      /** ... unless the number is known: its last sends' verifications tell (`GuardVerdict`). */
      unlessKnown?: true;
      /** The guard did not judge it (RiskCheck=disable, safe list): it feeds none of the guard's signals. */
      guardExempt?: boolean;
      /** The service has a webhook endpoint: the verification's changes go to the events function. */
      webhooks?: true;
    }
  | { ok: false; counted: boolean; error: OtpError; guard?: GuardDecision };

/**
 * The send's refusals in the order they are checked (docs/api.md). Refusals about the number itself (from
 * policy on) count as sends to that number: the per-number limits count every send, refused ones included.
 */
function decide(
  { settings, allowedChannels }: Pick<SendDeps, 'settings' | 'allowedChannels'>,
  context: SendContext,
  phone: PhoneNumber,
  templateSid: string | undefined,
  now: Date,
  riskCheckDisabled = false,
): Verdict {
  const refuse = (counted: boolean, code: OtpError['code'], message: string): Verdict => ({
    ok: false,
    counted,
    error: new OtpError(code, message),
  });
  const service = context.service;
  // The authenticated key is bound to this service, so a missing record means it was deleted.
  if (!service) return refuse(false, 'forbidden', 'The service does not exist.');

  let template: Template | undefined;
  if (templateSid) {
    template = context.template;
    if (!template)
      return refuse(false, 'unknown_template', 'TemplateSid is not one of the account templates.');
  } else {
    template = service.defaultTemplate;
    if (!template)
      return refuse(false, 'no_default_template', 'No TemplateSid given and no default template set.');
  }

  const policy = policyRefusal(service, phone);
  if (policy) return refuse(true, 'blocked_by_policy', policy);
  const enabledChannels = service.enabledChannels.filter((channel) => allowedChannels.includes(channel));
  const route = planRoute(phone, { enabledChannels, prices: service.prices });
  // The pumping guard is one of the account's delivery rules: it judges before the channels and the price.
  const guard = guardVerdict({
    settings: service.guard ?? DEFAULT_GUARD_SETTINGS,
    serviceSid: service.sid,
    // A caller may skip the guard only where the service's owner allows it.
    riskCheckDisabled: riskCheckDisabled && service.guard?.riskCheckOptOut === true,
    e164: phone.e164,
    country: phone.country,
    view: {
      ...(context.guard ?? { service: {}, global: {} }),
      known: knownFrom(context.previous, context.number, service.sid),
    },
    now: now.getTime(),
  });
  const decision: GuardDecision | undefined =
    guard.action === 'allow'
      ? undefined
      : {
          mode: guard.action === 'block' ? 'blocked' : guard.action,
          reason: guard.reason,
          prefix: guard.prefix,
          scope: guard.scope,
          figures: guard.figures,
          price: route.ok ? route.price : 0,
          at: now.getTime(),
        };
  if (guard.action === 'block' && decision)
    return { ...refuse(true, 'blocked_by_policy', blockedMessage(guard.reason)), guard: decision };
  if (!route.ok) {
    const messages = {
      unroutable: 'The country of this number is not served.',
      no_eligible_channel: 'None of the enabled channels can reach this number.',
      not_priceable: 'No price exists for this destination.',
    };
    return refuse(route.code !== 'unroutable', route.code, messages[route.code]);
  }
  const nowMs = now.getTime();
  // A channel that rejected this number recently cannot reach it: it is left out of the plan, and when every
  // channel of this service's plan has, the send is refused. Rejections are kept per channel, so a service
  // that enables one channel can never make a number unreachable for services that enable others.
  const rejected = context.number.rejectedUntil;
  const channels = route.channels.filter((channel) => !((rejected[channel] ?? 0) > nowMs));
  if (channels.length === 0) {
    return refuse(true, 'unreachable', 'Every channel rejected this number recently.');
  }
  const sendsWithin = (seconds: number) =>
    context.number.sends.filter((at) => at > nowMs - seconds * 1000).length;
  if (sendsWithin(settings.burstWindowSeconds) >= settings.burstLimit) {
    return refuse(true, 'burst', `More than ${settings.burstLimit} sends to this number in a short time.`);
  }
  if (sendsWithin(settings.hourlyWindowSeconds) >= settings.hourlyLimit) {
    return refuse(true, 'rate_limited', `More than ${settings.hourlyLimit} sends to this number in an hour.`);
  }
  // A balance spread over shards the read did not see is judged by the accepting transaction alone.
  if (!context.balanceUnread && service.balance < route.price)
    return refuse(true, 'insufficient_funds', 'Balance too low.');
  const exempt =
    guard.action === 'allow' && (guard.why === 'risk_check_disabled' || guard.why === 'safe_list');
  return {
    ok: true,
    template,
    channels,
    price: route.price,
    ...(decision && { guard: decision }),
    ...(guard.action === 'shadow' && guard.unlessKnown && { unlessKnown: true }),
    ...(exempt && { guardExempt: true }),
    ...(service.webhookEndpoints.length > 0 && { webhooks: true as const }),
  };
}

/**
 * The service's own delivery rules, as the refusal's message: a blocked country or prefix (a deny always wins),
 * then the allow-list. A country that is not served is left to routing (`unroutable`), list or not.
 */
function policyRefusal(service: Service, phone: PhoneNumber): string | undefined {
  const { blockedCountries, blockedPrefixes, allowedCountries } = service.rules;
  if (
    blockedCountries.includes(phone.country) ||
    blockedPrefixes.some((prefix) => phone.e164.startsWith(prefix))
  )
    return 'A delivery rule blocks this destination.';
  if (allowedCountries && ROUTES[phone.country] && !allowedCountries.includes(phone.country))
    return 'This service does not send to this country.';
  return undefined;
}

/** The log after this send: only what either window can still need, at most one limit's worth of entries. */
function appendSend(settings: Settings, number: NumberRecord, now: Date): number[] {
  const horizon = now.getTime() - Math.max(settings.burstWindowSeconds, settings.hourlyWindowSeconds) * 1000;
  const keep = Math.max(settings.burstLimit, settings.hourlyLimit);
  return [...number.sends.filter((at) => at > horizon), now.getTime()].slice(-keep);
}

function newVerification(
  deps: SendDeps,
  request: SendRequest,
  phone: PhoneNumber,
  verdict: Extract<Verdict, { ok: true }>,
  now: Date,
): Verification {
  const sid = deps.random.sid('VE');
  const code = request.code ?? deps.random.code();
  return {
    sid,
    serviceSid: request.serviceSid,
    to: phone.e164,
    country: phone.country,
    status: 'PENDING',
    deliveryStatus: 'PENDING',
    channel: verdict.channels[0] ?? null,
    price: verdict.price,
    attemptsRemaining: deps.settings.maxCheckAttempts,
    expiresAt: new Date(now.getTime() + deps.settings.codeTtlSeconds * 1000).toISOString(),
    dateCreated: now.toISOString(),
    clientCode: request.code !== undefined,
    codeHash: request.code === undefined ? deps.vault.hash(sid, code) : undefined,
    sealedCode: deps.vault.seal(sid, code),
    message: verdict.template.body,
    channels: verdict.channels,
    deliveries: {},
    ...(verdict.guard && { guard: verdict.guard }),
    ...(verdict.guardExempt && { guardExempt: true }),
    ...(verdict.webhooks && { webhooks: true }),
  };
}

/**
 * The accepted send an `Idempotency-Key` names, replayed, whatever else the repeat says (even a `To` or `Code` the
 * HTTP layer refuses); undefined when the key names none. Reads nothing before the caller is authenticated.
 */
export async function replayAcceptedSend(
  deps: Pick<SendDeps, 'store' | 'clock'>,
  request: Pick<SendRequest, 'serviceSid' | 'idempotencyKey' | 'authorized'>,
): Promise<SendResult | undefined> {
  await request.authorized;
  if (!request.idempotencyKey) return undefined;
  const sid = await deps.store.getIdempotentSid(request.serviceSid, request.idempotencyKey, deps.clock.now());
  return sid ? replay(deps, sid) : undefined;
}

async function replay(deps: Pick<SendDeps, 'store' | 'clock'>, sid: string): Promise<SendResult> {
  const verification = await deps.store.getVerification(sid);
  // The idempotency item is written in the same transaction as the verification, so this cannot be missing.
  if (!verification) throw new OtpError('internal_error', 'Idempotency record without its verification.');
  return { verification: toView(verification, deps.clock.now()), replayed: true, deliveryStarted: true };
}
