import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Node } from 'constructs';
import {
  deliveryTimeBudget,
  EXPRESS_EXECUTION_LIMIT_SECONDS,
  STATUS_READ_BUDGET_SECONDS,
  TASK_RUN_BUDGET_SECONDS,
} from '../functions/core/delivery-time';
import { CHANNELS, parseChannelList } from '../functions/core/routing';
import { DEFAULT_SETTINGS, SETTING_ENV, type Settings } from '../functions/core/settings';
import { configuredChannels } from '../functions/adapters/providers/config';
import { legacyApiKeysUntilFromEnv } from '../functions/wiring/env';
import {
  PROVIDER_CONTEXT_KEYS,
  REMOVED_CONTEXT_KEYS,
  readProviderDeployment,
  type ProviderDeployment,
} from './provider-config';

/**
 * Deployment settings, read from CDK context (`cdk.json` or `-c key=value`). Every key is optional; the
 * defaults are the service's (imported from the handlers' own settings module, so the two cannot drift).
 * Values are validated at synth time: a bad value fails `cdk synth`, not the first request.
 */
export interface OtpConfig {
  /** Every limit setting, always passed to the functions (defaults included, so they are visible). */
  settings: Settings;
  /** Channels the deployment may use at all (a service's enabled channels are further limited by this). */
  allowedChannels: string[];
  /** Base URL of the HTTP carrier gateway; omitted from the environment when not given. */
  carrierUrl: string | undefined;
  /**
   * The stage's default throttling (requests per second, and burst): only routes without their own below, that is
   * `$default` (requests that match no route).
   */
  throttleRateLimit: number;
  throttleBurstLimit: number;
  /** The public API's throttling: its send route's; the check route gets the same, the fetch route twice. */
  apiThrottleRateLimit: number;
  apiThrottleBurstLimit: number;
  /** Each console route's throttling (its page, its files, its API). */
  consoleThrottleRateLimit: number;
  consoleThrottleBurstLimit: number;
  /** The receipt route's own throttling (requests per second, and burst), apart from the public API's. */
  receiptThrottleRateLimit: number;
  receiptThrottleBurstLimit: number;
  /** Concurrency reserved for the receipt function; undefined: none (the account's unreserved pool). */
  receiptReservedConcurrency: number | undefined;
  /**
   * Receipt callbacks on the receipt function's own URL (a Lambda function URL) instead of the HTTP API: no API
   * Gateway request per callback. Only with `receiptReservedConcurrency`, which is then the route's throttle.
   */
  receiptFunctionUrl: boolean;
  /**
   * The most webhook sender instances its queue may run at once (the SQS event source's maximum concurrency): a
   * service whose endpoints never answer holds each instance for the request's time limit, and without a ceiling
   * its retries could take the account's concurrency from the sends and checks.
   */
  webhookSenderMaxConcurrency: number;
  /**
   * X-Ray active tracing on every function and the state machine (`otp:tracing`, off). Lambda samples a request a
   * second and 5 % of the rest, which it does not let one configure: below a few verifications a second that is
   * most of them, and X-Ray would cost more than the rest of the bill (docs/adr/0024).
   */
  tracing: boolean;
  logRetention: RetentionDays;
  /** CloudFront and AWS WAF in front of the HTTP API (`otp:edge`); undefined: callers reach the API directly. */
  edge: EdgeConfig | undefined;
  /** Existing SNS topic the alarms notify; without it the alarms only change state. */
  alarmTopicArn: string | undefined;
  /** The delivery providers (`otp:providers` and their settings); undefined: every channel on http-carrier. */
  providers: ProviderDeployment | undefined;
  /** From this ISO date on, API keys of the legacy format are refused (`OTP_LEGACY_API_KEYS_UNTIL`). */
  legacyApiKeysUntil: string | undefined;
}

export interface EdgeConfig {
  /** Requests one `X-API-Key` value may make in a minute before the WebACL blocks it. */
  keyRequestsPerMinute: number;
  /** Requests one IP address may make in a minute without a key, and to the console, before it is blocked. */
  ipRequestsPerMinute: number;
}

/** Context key of each setting: `otp:` + the setting's name, e.g. `otp:codeTtlSeconds`. */
const settingContextKey = (name: keyof Settings): string => `otp:${name}`;

const CONTEXT_KEYS = {
  allowedChannels: 'otp:allowedChannels',
  carrierUrl: 'otp:carrierUrl',
  throttleRateLimit: 'otp:throttleRateLimit',
  throttleBurstLimit: 'otp:throttleBurstLimit',
  apiThrottleRateLimit: 'otp:apiThrottleRateLimit',
  apiThrottleBurstLimit: 'otp:apiThrottleBurstLimit',
  consoleThrottleRateLimit: 'otp:consoleThrottleRateLimit',
  consoleThrottleBurstLimit: 'otp:consoleThrottleBurstLimit',
  receiptThrottleRateLimit: 'otp:receiptThrottleRateLimit',
  receiptThrottleBurstLimit: 'otp:receiptThrottleBurstLimit',
  receiptReservedConcurrency: 'otp:receiptReservedConcurrency',
  receiptFunctionUrl: 'otp:receiptFunctionUrl',
  webhookSenderMaxConcurrency: 'otp:webhookSenderMaxConcurrency',
  tracing: 'otp:tracing',
  logRetentionDays: 'otp:logRetentionDays',
  alarmTopicArn: 'otp:alarmTopicArn',
  edge: 'otp:edge',
  edgeKeyRequestsPerMinute: 'otp:edgeKeyRequestsPerMinute',
  edgeIpRequestsPerMinute: 'otp:edgeIpRequestsPerMinute',
  legacyApiKeysUntil: 'otp:legacyApiKeysUntil',
} as const;

/** The sizing behind these figures (a capacity target in sends per second) is in docs/deploy.md, "Throttling". */
const DEFAULTS = {
  throttleRateLimit: 100,
  throttleBurstLimit: 200,
  apiThrottleRateLimit: 1000,
  apiThrottleBurstLimit: 2000,
  consoleThrottleRateLimit: 20,
  consoleThrottleBurstLimit: 40,
  receiptThrottleRateLimit: 3000,
  webhookSenderMaxConcurrency: 100,
  // API Gateway's default account burst: a larger bucket on one route could never fill.
  receiptThrottleBurstLimit: 5000,
  logRetentionDays: RetentionDays.ONE_MONTH,
  edgeIpRequestsPerMinute: 300,
  /** The edge's per-key limit, as a multiple of the handlers' (`keyRequestsPerMinute`), see readEdge. */
  edgeKeyLimitFactor: 10,
} as const;

/** AWS WAF's smallest rate-based limit. */
const WAF_MIN_RATE_LIMIT = 10;

/** Context from the CLI arrives as strings, from cdk.json as JSON values; treat both alike. */
function raw(node: Node, key: string): string | undefined {
  const value: unknown = node.tryGetContext(key);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return value.map(String).join(',');
  throw new Error(`Context ${key} must be a string or a number`);
}

function wholeNumber(node: Node, key: string, fallback: number, min: number): number {
  const text = raw(node, key);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`Context ${key} must be a whole number >= ${min}, got "${text}"`);
  }
  return value;
}

/** A whole number >= min, or undefined when the context key is not set. */
function optionalWholeNumber(node: Node, key: string, min: number): number | undefined {
  return raw(node, key) === undefined ? undefined : wholeNumber(node, key, min, min);
}

/** The stack's name (bin/app.ts), read before any construct exists. */
const STACK_NAME_KEY = 'otp:stackName';

/**
 * Every `otp:` key the app reads. Any other is refused at synth: a misspelt key (`otp:alarmTopicArm`) would
 * otherwise be ignored, and the stack deployed without the setting (alarms that notify no one).
 */
function refuseUnknownContextKeys(node: Node): void {
  const known = [
    ...Object.values(CONTEXT_KEYS),
    ...(Object.keys(SETTING_ENV) as (keyof Settings)[]).map(settingContextKey),
    ...Object.values(PROVIDER_CONTEXT_KEYS),
    ...Object.keys(REMOVED_CONTEXT_KEYS),
    STACK_NAME_KEY,
  ];
  for (const key of Object.keys(node.getAllContext() as Record<string, unknown>)) {
    if (!key.startsWith('otp:') || known.includes(key)) continue;
    const near = known.find((candidate) => editDistance(candidate.toLowerCase(), key.toLowerCase()) <= 2);
    throw new Error(
      `Context ${key} is not a setting of this stack${near ? ` (did you mean ${near}?)` : ''}: docs/deploy.md lists them`,
    );
  }
}

/** Levenshtein distance: a misspelling's few letters. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

export function readConfig(node: Node): OtpConfig {
  refuseUnknownContextKeys(node);
  const settings = { ...DEFAULT_SETTINGS };
  for (const name of Object.keys(SETTING_ENV) as (keyof Settings)[]) {
    // Same bounds as the handlers' settingsFromEnv: the channel wait may be 0 (tests), the rest >= 1.
    settings[name] = wholeNumber(
      node,
      settingContextKey(name),
      DEFAULT_SETTINGS[name],
      name === 'channelWaitSeconds' ? 0 : 1,
    );
  }

  const channelsText = raw(node, CONTEXT_KEYS.allowedChannels);
  const { channels: allowedChannels, unknown } = channelsText
    ? parseChannelList(channelsText)
    : { channels: [...CHANNELS], unknown: [] };
  if (unknown.length > 0 || allowedChannels.length === 0) {
    throw new Error(
      `Context ${CONTEXT_KEYS.allowedChannels} must list some of ${CHANNELS.join(',')}, got "${channelsText}"`,
    );
  }

  // The functions allow only the channels some provider carries (functions/wiring/deps.ts).
  const providers = readProviderDeployment(node);
  const configured: string[] = providers ? configuredChannels(providers.config) : allowedChannels;
  const usable = allowedChannels.filter((channel) => configured.includes(channel));
  if (usable.length === 0) {
    throw new Error(
      `No channel is both allowed (${CONTEXT_KEYS.allowedChannels}) and given a provider (otp:providers)`,
    );
  }
  checkDeliveryFitsExpress(settings.channelWaitSeconds, usable.length);

  const carrierUrl = raw(node, CONTEXT_KEYS.carrierUrl);
  if (carrierUrl !== undefined) {
    let protocol: string;
    try {
      protocol = new URL(carrierUrl).protocol;
    } catch {
      throw new Error(`Context ${CONTEXT_KEYS.carrierUrl} is not a URL: "${carrierUrl}"`);
    }
    // Messages carry codes: only HTTPS leaves the AWS network.
    if (protocol !== 'https:') {
      throw new Error(`Context ${CONTEXT_KEYS.carrierUrl} must be an https:// URL, got "${carrierUrl}"`);
    }
  }

  const logRetention = wholeNumber(node, CONTEXT_KEYS.logRetentionDays, DEFAULTS.logRetentionDays, 1);
  if (!(Object.values(RetentionDays) as number[]).includes(logRetention)) {
    throw new Error(
      `Context ${CONTEXT_KEYS.logRetentionDays} must be a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, ...), got ${logRetention}`,
    );
  }

  const receiptReservedConcurrency = optionalWholeNumber(node, CONTEXT_KEYS.receiptReservedConcurrency, 1);
  const receiptFunctionUrl = flag(node, CONTEXT_KEYS.receiptFunctionUrl);
  // A function URL has no API Gateway throttle in front of it: without reserved concurrency a flood of forged
  // callbacks could take the account's whole concurrency from the sends and checks.
  if (receiptFunctionUrl && receiptReservedConcurrency === undefined) {
    throw new Error(
      `Context ${CONTEXT_KEYS.receiptFunctionUrl}=true needs ${CONTEXT_KEYS.receiptReservedConcurrency}: on a function ` +
        'URL the reserved concurrency is the only limit on the receipt route (10 carries several hundred ' +
        'receipts a second)',
    );
  }

  const webhookSenderMaxConcurrency = wholeNumber(
    node,
    CONTEXT_KEYS.webhookSenderMaxConcurrency,
    DEFAULTS.webhookSenderMaxConcurrency,
    2,
  );
  // Lambda's bounds for an SQS event source's maximum concurrency.
  if (webhookSenderMaxConcurrency > 1000) {
    throw new Error(
      `Context ${CONTEXT_KEYS.webhookSenderMaxConcurrency} must be at most 1000 (Lambda's bound), got ${webhookSenderMaxConcurrency}`,
    );
  }

  const alarmTopicArn = raw(node, CONTEXT_KEYS.alarmTopicArn);
  if (alarmTopicArn !== undefined && !/^arn:aws[\w-]*:sns:[\w-]+:\d{12}:[\w-]+$/.test(alarmTopicArn)) {
    throw new Error(`Context ${CONTEXT_KEYS.alarmTopicArn} is not an SNS topic ARN: "${alarmTopicArn}"`);
  }

  const legacyApiKeysUntil = raw(node, CONTEXT_KEYS.legacyApiKeysUntil);
  if (legacyApiKeysUntil !== undefined) {
    // The functions' own parser: a value they would refuse at cold start fails the synth instead.
    try {
      legacyApiKeysUntilFromEnv({ OTP_LEGACY_API_KEYS_UNTIL: legacyApiKeysUntil });
    } catch {
      throw new Error(
        `Context ${CONTEXT_KEYS.legacyApiKeysUntil} must be an ISO 8601 date such as 2026-06-30, got "${legacyApiKeysUntil}"`,
      );
    }
  }

  return {
    settings,
    allowedChannels,
    carrierUrl: carrierUrl?.replace(/\/+$/, ''),
    throttleRateLimit: wholeNumber(node, CONTEXT_KEYS.throttleRateLimit, DEFAULTS.throttleRateLimit, 1),
    throttleBurstLimit: wholeNumber(node, CONTEXT_KEYS.throttleBurstLimit, DEFAULTS.throttleBurstLimit, 1),
    apiThrottleRateLimit: wholeNumber(
      node,
      CONTEXT_KEYS.apiThrottleRateLimit,
      DEFAULTS.apiThrottleRateLimit,
      1,
    ),
    apiThrottleBurstLimit: wholeNumber(
      node,
      CONTEXT_KEYS.apiThrottleBurstLimit,
      DEFAULTS.apiThrottleBurstLimit,
      1,
    ),
    consoleThrottleRateLimit: wholeNumber(
      node,
      CONTEXT_KEYS.consoleThrottleRateLimit,
      DEFAULTS.consoleThrottleRateLimit,
      1,
    ),
    consoleThrottleBurstLimit: wholeNumber(
      node,
      CONTEXT_KEYS.consoleThrottleBurstLimit,
      DEFAULTS.consoleThrottleBurstLimit,
      1,
    ),
    receiptThrottleRateLimit: wholeNumber(
      node,
      CONTEXT_KEYS.receiptThrottleRateLimit,
      DEFAULTS.receiptThrottleRateLimit,
      1,
    ),
    receiptThrottleBurstLimit: wholeNumber(
      node,
      CONTEXT_KEYS.receiptThrottleBurstLimit,
      DEFAULTS.receiptThrottleBurstLimit,
      1,
    ),
    receiptReservedConcurrency,
    receiptFunctionUrl,
    webhookSenderMaxConcurrency,
    tracing: flag(node, CONTEXT_KEYS.tracing),
    logRetention: logRetention as RetentionDays,
    edge: readEdge(node, settings),
    alarmTopicArn,
    providers,
    legacyApiKeysUntil,
  };
}

function flag(node: Node, key: string): boolean {
  const text = raw(node, key) ?? 'false';
  if (text !== 'true' && text !== 'false')
    throw new Error(`Context ${key} must be true or false, got "${text}"`);
  return text === 'true';
}

/**
 * The edge's limits. Its per-key limit sits well above the handlers' own, so a caller that honours their 429 and
 * `Retry-After` never meets it: it only stops a key whose caller keeps hammering, before the requests cost
 * anything behind CloudFront. It follows `otp:keyRequestsPerMinute` unless set.
 */
function readEdge(node: Node, settings: Settings): EdgeConfig | undefined {
  const keys = [CONTEXT_KEYS.edgeKeyRequestsPerMinute, CONTEXT_KEYS.edgeIpRequestsPerMinute];
  if (!flag(node, CONTEXT_KEYS.edge)) {
    const stray = keys.find((key) => raw(node, key) !== undefined);
    if (stray) throw new Error(`Context ${stray} needs ${CONTEXT_KEYS.edge}=true`);
    return undefined;
  }
  return {
    keyRequestsPerMinute: wholeNumber(
      node,
      CONTEXT_KEYS.edgeKeyRequestsPerMinute,
      Math.max(WAF_MIN_RATE_LIMIT, DEFAULTS.edgeKeyLimitFactor * settings.keyRequestsPerMinute),
      WAF_MIN_RATE_LIMIT,
    ),
    ipRequestsPerMinute: wholeNumber(
      node,
      CONTEXT_KEYS.edgeIpRequestsPerMinute,
      DEFAULTS.edgeIpRequestsPerMinute,
      WAF_MIN_RATE_LIMIT,
    ),
  };
}

/**
 * The longest delivery (every channel silent: its wait, its status reads and two task runs each, plus a settling run; see
 * functions/core/delivery-time.ts) must end within the five minutes an Express execution may run, or AWS stops
 * it mid-delivery. Refused here rather than discovered as deliveries the sweeper has to settle.
 */
function checkDeliveryFitsExpress(waitSeconds: number, channels: number): void {
  const budget = deliveryTimeBudget(channels, waitSeconds);
  if (budget.totalSeconds <= EXPRESS_EXECUTION_LIMIT_SECONDS) return;
  const waitKey = settingContextKey('channelWaitSeconds');
  const fix =
    budget.maxWaitSeconds >= 0
      ? `set ${waitKey} to at most ${budget.maxWaitSeconds}, or allow fewer channels`
      : 'allow fewer channels';
  throw new Error(
    `Context ${waitKey}=${waitSeconds} is too long for ${channels} channels (${CONTEXT_KEYS.allowedChannels}): ` +
      `${channels} × ${waitSeconds} s of receipt waits + ${budget.statusReads} status reads × ${STATUS_READ_BUDGET_SECONDS} s ` +
      `+ ${budget.taskRuns} task runs × ${TASK_RUN_BUDGET_SECONDS} s ` +
      `= ${budget.totalSeconds} s, over the ${EXPRESS_EXECUTION_LIMIT_SECONDS} s a Step Functions Express ` +
      `execution may run; ${fix}`,
  );
}

/** The settings as the functions' environment variables (names from the handlers' SETTING_ENV). */
export function settingsEnvironment(settings: Settings): Record<string, string> {
  return Object.fromEntries(
    (Object.entries(SETTING_ENV) as [keyof Settings, string][]).map(([name, variable]) => [
      variable,
      String(settings[name]),
    ]),
  );
}
