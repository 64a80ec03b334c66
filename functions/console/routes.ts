/**
 * The console's JSON API (`/console/api/*`) and its static files (`/console`, `/console/<asset>`): one handler for
 * the `console` function of the manifest. API Gateway's JWT authorizer has checked the token of every API route;
 * the handler takes the user from the claims it hands over (`requestContext.authorizer.jwt.claims`) and decides
 * per service: an operator (Cognito group `operators`) may act on any service, anyone else only on the services
 * the table lists for the user (`MEMBER#<user>` items, written by `npm run admin -- member add`).
 *
 * Everything it changes goes through the stores the admin command uses (AccountStore, DynamoWebhookEndpoints):
 * nothing is written twice. It reads activity only from what the request paths already write (ActivityReader),
 * and webhook deliveries from the records the webhook sender writes per attempt (DynamoWebhookDeliveries).
 */
import middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod/mini';
import { consoleIssueMessage } from './issue-message';
import type { ActivityReader } from '../adapters/dynamodb/activity';
import type { DynamoConsoleRequests } from '../adapters/dynamodb/console-requests';
import type { CapBlock, DynamoGuardAdmin } from '../adapters/dynamodb/guard';
import type { DynamoWebhookDeliveries, DynamoWebhookEndpoints } from '../adapters/dynamodb/webhooks';
import type { WebhookSecretVault } from '../adapters/webhooks/secrets';
import type { Logger } from '../adapters/logger';
import { apiKeyLimit, smsPartLimit, valid, type Accounts } from '../core/accounts/accounts';
import type { ChangeContext } from '../core/accounts/ports';
import {
  MAX_BLOCKED_PREFIXES,
  MAX_SAFE_LIST,
  parseE164Prefix,
  parseKeyId,
  parseServiceName,
  parseSid,
  parseTopUp,
  type Parsed,
} from '../core/accounts/formats';
import {
  HIGH_RISK_COUNTRIES,
  defaultAllowedCountries,
  excludedHighRisk,
  type HighRiskCountry,
} from '../core/guard/high-risk-countries';
import { ANY_COUNTRY, CAP_FIELDS, CAP_NAMES, capCountries, capProblem, isSpendCap } from '../core/guard/caps';
import { DEFAULT_GUARD_SETTINGS, GUARD_LEVELS, type CountryCaps } from '../core/guard/model';
import { dropRanges } from '../core/guard/conversion-watch';
import { LIFT_MS, blocksInForce, conversionDrops } from '../core/guard/status';
import type { Service, Verification } from '../core/model';
import { effectiveStatus } from '../core/verification';
import { formatUnits, parseUsd } from '../core/money';
import type { Clock, Random } from '../core/ports';
import { CHANNELS, ROUTES as COUNTRY_ROUTES, type Channel } from '../core/routing';
import type { Settings } from '../core/settings';
import {
  MAX_WEBHOOK_ENDPOINTS_PER_SERVICE,
  checkWebhookUrl,
  webhookEndpointView,
  type WebhookDeliveryRecord,
} from '../core/webhooks';
import { OtpError } from '../core/errors';
import {
  HttpStatusError,
  errorResponses,
  minuteWindow,
  requestLog,
  secondsToNextWindow,
  type ApiContext,
} from '../http/middleware';
import type { HttpResponse } from '../http/response';
import {
  chargeSummary,
  chargesCsv,
  conversion,
  timeline,
  webhookDeliveryText,
  type ChargeLine,
} from './views';

/** The Cognito group whose members see and manage every service. */
export const OPERATOR_GROUP = 'operators';

/** The console's files, served from `/console`. */
export interface ConsoleAssets {
  /** File name (`index.html`, `app.js`, `app.css`) to its content. */
  files: Record<string, string>;
}

export interface ConsoleDeps {
  /** The accounts core: every change is checked there and leaves an audit record. */
  accounts: Accounts;
  activity: Pick<ActivityReader, 'charges' | 'verifications' | 'verification'>;
  /** The caps reached now (the guard consumer's `country_cap` blocks), the guard's blocks, lifting them. */
  guard: Pick<DynamoGuardAdmin, 'capsReached' | 'overview' | 'unblock'>;
  webhooks: Pick<DynamoWebhookEndpoints, 'listEndpoints' | 'addEndpoint' | 'setEnabled' | 'rotateSecret'>;
  /** The webhook sender's delivery records (one per attempt, 7 days). */
  webhookDeliveries: Pick<DynamoWebhookDeliveries, 'recent' | 'forVerification'>;
  /** Seals webhook signing secrets with the function's webhook key (on a cold start, once its secret is read). */
  webhookVault: () => Promise<WebhookSecretVault>;
  /** Counts each API request in its user's minute (the per-user limit, `consoleRequestsPerMinute`). */
  requests: Pick<DynamoConsoleRequests, 'count'>;
  random: Random;
  clock: Clock;
  settings: Pick<Settings, 'maxCheckAttempts' | 'channelWaitSeconds' | 'consoleRequestsPerMinute'>;
  logger: Logger;
  /** http:// and private webhook URLs (the local stack only). */
  webhookAllowPrivate: boolean;
  /** What `/console/config.json` tells the page: how to sign in. */
  publicConfig: Record<string, string>;
  assets: () => Promise<ConsoleAssets>;
}

interface ConsoleUser {
  id: string;
  /** For people: the e-mail claim when there is one. */
  name: string;
  operator: boolean;
}

/** At most this many charge lines a request reads; the page says when there were more. */
const MAX_CHARGE_LINES = 5000;
/** Verifications read (BatchGetItem) for the countries of charges and for conversion. */
const MAX_VERIFICATIONS_READ = 1000;
/** Verifications a list page shows; a number search looks through this many of the latest. */
const LIST_PAGE = 50;
const SEARCH_DEPTH = 1000;
/** Audit records one request reads (newest first). */
const MAX_AUDIT_RECORDS = 500;

/**
 * How far past a verification's expiry its webhook deliveries are looked for: more than a day, and the whole
 * retry schedule (nine attempts over 30 h 20 min) of an event at expiry.
 */
const WEBHOOK_RETRY_SPAN_MS = 31 * 3_600_000;

const deliveryJson = (d: WebhookDeliveryRecord) => ({
  at: d.at,
  endpointSid: d.endpointSid,
  eventId: d.eventId,
  eventType: d.eventType,
  verificationSid: d.verificationSid ?? null,
  attempt: d.attempt,
  status: d.status ?? null,
  error: d.error ?? null,
  durationMs: d.durationMs,
  delivered: d.delivered,
  final: d.final,
  text: webhookDeliveryText(d),
});

/** The problem as a 404 `not_found` (a malformed id names nothing), else the value. */
function named<T>(parsed: Parsed<T>, what: string): T {
  if (!parsed.ok) throw new HttpStatusError(404, 'not_found', `No such ${what}.`);
  return parsed.value;
}

/*
 * zod's functional API (`zod/mini`): the console's bundle carries only the checks it uses (a fraction of classic
 * zod's size and require time; docs/bench.md). Its messages are not answered: `consoleIssueMessage` words them.
 */

const usd = z.pipe(
  z.string().check(z.maxLength(20)),
  z.transform((text: string, ctx) => {
    const units = parseUsd(text);
    if (units === undefined) {
      ctx.issues.push({
        code: 'custom',
        message: 'must be an amount in USD with at most 4 decimals, as "10.50".',
        input: text,
      });
      return z.NEVER;
    }
    return units;
  }),
);
const channelList = z.array(z.enum(CHANNELS)).check(z.minLength(1), z.maxLength(CHANNELS.length));
const countryList = z
  .array(
    z.pipe(
      z.string().check(z.regex(/^[A-Za-z]{2}$/, { error: 'must be a two-letter country code, as "US".' })),
      z.transform((c: string) => c.toUpperCase()),
    ),
  )
  .check(z.maxLength(250));
const schemas = {
  createService: z.object({
    name: z.string(),
    balance: z.optional(usd),
    channels: z.optional(channelList),
  }),
  // `key`: the page's key for this top-up, the same on a retry after an error (credited once).
  topUp: z.object({ amount: usd, key: z.optional(z.string().check(z.maxLength(191))) }),
  channels: z.object({
    channels: channelList,
    /** The version of the channels the list was made from (the service's answer's `channelsVersion`), as rules. */
    channelsVersion: z.optional(z.int().check(z.minimum(0))),
  }),
  // The formats (length, {code}, SMS parts, locale) are the accounts core's.
  template: z.object({
    body: z.string().check(z.maxLength(16 * 1024)),
    locale: z.optional(z.string().check(z.maxLength(64))),
    default: z.optional(z.boolean()),
  }),
  rules: z.object({
    blockedCountries: countryList,
    blockedPrefixes: z.array(z.string().check(z.maxLength(64))).check(z.maxLength(MAX_BLOCKED_PREFIXES)),
    /** Absent: unchanged. null: no allow-list (every served country). A list, empty included: that list. */
    allowedCountries: z.optional(z.nullable(countryList)),
    /**
     * The version of the rules the lists were made from (the rules' answer's `rulesVersion`). Absent: a page
     * loaded before the console sent it, refused as a change made on an older copy.
     */
    rulesVersion: z.optional(z.int().check(z.minimum(0))),
  }),
  /** Each field absent: unchanged. */
  guard: z.object({
    riskCheckOptOut: z.optional(z.boolean()),
    level: z.optional(z.enum(GUARD_LEVELS)),
    safeList: z.optional(z.array(z.string().check(z.maxLength(64))).check(z.maxLength(MAX_SAFE_LIST))),
    /** The version of the guard settings they were made from (the guard's answer's `guardVersion`), as rules. */
    guardVersion: z.optional(z.int().check(z.minimum(0))),
  }),
  unblock: z.object({ prefix: z.string().check(z.maxLength(64)) }),
  /** Every cap of one country; absent or null: no such cap. Sends as whole numbers, spend as USD strings. */
  caps: z.object({
    hourlySends: z.optional(z.nullable(z.number())),
    dailySends: z.optional(z.nullable(z.number())),
    hourlySpend: z.optional(z.nullable(usd)),
    dailySpend: z.optional(z.nullable(usd)),
  }),
  webhook: z.object({ url: z.string().check(z.minLength(1), z.maxLength(2048)) }),
  rotate: z.object({ now: z.optional(z.boolean()) }),
};

type Params = Record<string, string>;
interface Request {
  method: string;
  params: Params;
  query: URLSearchParams;
  body: unknown;
  user: ConsoleUser;
  /** Who changes what, for the audit record. */
  change: ChangeContext;
}
type Handler = (deps: ConsoleDeps, request: Request) => Promise<HttpResponse>;
interface ApiRoute {
  method: string;
  /** As written, `:name` for a parameter: the request log's route. */
  path: string;
  pattern: RegExp;
  names: string[];
  /** The route acts on the service in its path: the user must be a member, or an operator. */
  service: boolean;
  operatorOnly?: boolean;
  handle: Handler;
}

const route = (
  method: string,
  path: string,
  handle: Handler,
  options: { operatorOnly?: boolean } = {},
): ApiRoute => {
  const names: string[] = [];
  const pattern = new RegExp(
    `^${path.replace(/:(\w+)/g, (_, name: string) => {
      names.push(name);
      return '([^/]+)';
    })}$`,
  );
  return { method, path, pattern, names, service: names.includes('sid'), handle, ...options };
};

const json = (status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  statusCode: status,
  headers: {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...headers,
  },
  body: JSON.stringify(body),
});

const API_ROUTES: ApiRoute[] = [
  route('GET', '/me', async (deps, { user }) => {
    const services = user.operator
      ? (await deps.accounts.store.listAllServices()).map((s) => ({ sid: s.serviceSid, name: s.name }))
      : (await deps.accounts.store.membershipsOf(user.id)).map((m) => ({
          sid: m.serviceSid,
          name: m.serviceName,
        }));
    return json(200, { user: { id: user.id, name: user.name, operator: user.operator }, services });
  }),
  // The operator's list with each balance, in one request: a request per service would spend the operator's
  // per-user limit (and the route's burst, shared by everyone) on one page once the services number a hundred.
  route(
    'GET',
    '/services',
    async (deps) => {
      const entries = await deps.accounts.store.listAllServices();
      // The service items together (a BatchGetItem per hundred), not one read each.
      const services = await deps.accounts.getServices(entries.map((e) => e.serviceSid));
      return json(200, {
        services: entries.map((e, i) => {
          const balance = services[i]?.balance;
          return {
            sid: e.serviceSid,
            name: e.name,
            balance: balance === undefined ? null : formatUnits(balance),
          };
        }),
      });
    },
    { operatorOnly: true },
  ),
  route(
    'POST',
    '/services',
    async (deps, { body, change }) => {
      const input = parse(schemas.createService, body);
      const name = valid(parseServiceName(input.name));
      const service = await deps.accounts.createService(change, {
        name,
        balance: input.balance ?? 0,
        channels: input.channels ?? [...CHANNELS],
        defaultTemplateBody: `Your ${name} verification code is {code}.`,
      });
      return json(201, serviceJson(service));
    },
    { operatorOnly: true },
  ),
  route('GET', '/services/:sid', async (deps, { params }) =>
    json(200, serviceJson(await load(deps, params.sid!))),
  ),
  route('PUT', '/services/:sid/channels', async (deps, { params, body, change }) => {
    const { channels, channelsVersion } = parse(schemas.channels, body);
    // The list is whole, from the page's boxes: made on an older copy, it would undo the changes made since.
    const service = await deps.accounts
      .setChannels(change, params.sid!, channels as Channel[], copyVersion(channelsVersion))
      .catch(refuseStale(STALE_CHANNELS));
    return json(200, serviceJson(service));
  }),
  route('GET', '/services/:sid/keys', async (deps, { params }) => {
    const [service, keys] = await Promise.all([
      load(deps, params.sid!),
      deps.accounts.store.listApiKeysWithUse(params.sid!),
    ]);
    keys.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    return json(200, {
      keys: keys.map((key) => ({ ...key, active: !key.revokedAt })),
      activeKeys: keys.filter((key) => !key.revokedAt).length,
      keyLimit: apiKeyLimit(service),
    });
  }),
  route('POST', '/services/:sid/keys', async (deps, { params, change }) => {
    const issued = await deps.accounts.issueApiKey(change, params.sid!);
    // Shown once: the answer is never cached, and only the key's hash is stored.
    return json(201, { keyId: issued.keyId, apiKey: issued.apiKey });
  }),
  route('POST', '/services/:sid/keys/:keyId/revoke', async (deps, { params, change }) => {
    const keyId = named(parseKeyId(params.keyId!), 'key id');
    return json(200, await deps.accounts.revokeApiKey(change, params.sid!, keyId));
  }),
  route('GET', '/services/:sid/charges', async (deps, { params, query }) => {
    const service = await load(deps, params.sid!);
    const { charges, truncated, countries } = await chargesWithCountries(deps, params.sid!, query);
    return json(200, {
      balance: formatUnits(service.balance),
      days: days(query),
      truncated,
      ...chargeSummary(charges, countries),
      latest: charges.slice(0, LIST_PAGE).map((c) => ({
        at: c.at,
        verificationSid: c.verificationSid,
        amount: formatUnits(c.amount),
        country: countries.get(c.verificationSid) ?? null,
      })),
    });
  }),
  route('GET', '/services/:sid/charges.csv', async (deps, { params, query }) => {
    const { charges, countries } = await chargesWithCountries(deps, params.sid!, query);
    return {
      statusCode: 200,
      headers: {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="charges-${params.sid}.csv"`,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      },
      body: chargesCsv(charges, countries),
    };
  }),
  route('GET', '/services/:sid/verifications', async (deps, { params, query }) => {
    const search = (query.get('q') ?? '').trim();
    const now = deps.clock.now();
    if (parseSid('VE', search).ok) {
      const found = await deps.activity.verification(search);
      const mine = found && found.serviceSid === params.sid ? [found] : [];
      return json(200, {
        verifications: mine.map((v) => listItem(v, now)),
        searchedLatest: null,
        listedAtMost: LIST_PAGE,
      });
    }
    const number = search.replace(/[\s()-]/g, '');
    if (search !== '' && !/^\+?\d{3,15}$/.test(number)) {
      throw new HttpStatusError(400, 'invalid_parameter', 'Search by a VE… SID or a phone number (digits).');
    }
    const depth = number ? SEARCH_DEPTH : LIST_PAGE;
    const { charges } = await deps.activity.charges(
      params.sid!,
      { from: new Date(0), to: later(now) },
      depth,
    );
    const verifications = await deps.activity.verifications(charges.map((c) => c.verificationSid));
    const hits = number ? verifications.filter((v) => v.to.includes(number)) : verifications;
    return json(200, {
      verifications: hits.slice(0, LIST_PAGE).map((v) => listItem(v, now)),
      // A number is looked for among the latest sends only (no index on numbers: nothing is written for it).
      searchedLatest: number ? charges.length : null,
      // The list holds no more than this: an older verification is found by its SID or number.
      listedAtMost: LIST_PAGE,
    });
  }),
  route('GET', '/services/:sid/verifications/:ve', async (deps, { params }) => {
    const sid = named(parseSid('VE', params.ve!), 'verification SID');
    const found = await deps.activity.verification(sid);
    // Another service's verification is as absent as a missing one.
    if (!found || found.serviceSid !== params.sid)
      throw new HttpStatusError(404, 'not_found', 'No such verification.');
    // Its events happen from its creation until about its expiry; their retries run for up to 30 h 20 min more.
    const webhooks = await deps.webhookDeliveries.forVerification(
      params.sid!,
      sid,
      new Date(found.dateCreated),
      new Date(new Date(found.expiresAt).getTime() + WEBHOOK_RETRY_SPAN_MS),
    );
    return json(200, timeline(found, deps.settings, deps.clock.now(), webhooks));
  }),
  route('GET', '/services/:sid/conversion', async (deps, { params }) => {
    const now = deps.clock.now();
    const week = await deps.activity.charges(
      params.sid!,
      { from: new Date(now.getTime() - 7 * 86_400_000), to: later(now) },
      MAX_VERIFICATIONS_READ,
    );
    const verifications = new Map(
      (await deps.activity.verifications(week.charges.map((c) => c.verificationSid))).map((v) => [v.sid, v]),
    );
    const dayStart = new Date(now.getTime() - 86_400_000).toISOString();
    return json(200, {
      truncated: week.truncated,
      windows: {
        '24h': conversion(
          week.charges.filter((c) => c.at >= dayStart),
          verifications,
          now,
        ),
        '7d': conversion(week.charges, verifications, now),
      },
    });
  }),
  route('GET', '/services/:sid/templates', async (deps, { params }) => {
    const { service, templates } = await deps.accounts.templates(params.sid!);
    return json(200, {
      defaultTemplateSid: service.defaultTemplate?.sid ?? null,
      smsPartLimit: smsPartLimit(service),
      templates: templates.map((t) => ({ ...t, default: t.sid === service.defaultTemplate?.sid })),
    });
  }),
  route('POST', '/services/:sid/templates', async (deps, { params, body, change }) => {
    const input = parse(schemas.template, body);
    const template = await deps.accounts.addTemplate(change, params.sid!, {
      body: input.body,
      locale: input.locale,
      makeDefault: input.default === true,
    });
    return json(201, { ...template, default: input.default === true });
  }),
  // A member removes a template as they add one (the limit's refusal asks them to): not the default one.
  route('POST', '/services/:sid/templates/:hx/remove', async (deps, { params, change }) => {
    const sid = named(parseSid('HX', params.hx!), 'template SID');
    await deps.accounts.deleteTemplate(change, params.sid!, sid);
    return json(200, { removed: sid });
  }),
  route('POST', '/services/:sid/templates/:hx/default', async (deps, { params, change }) => {
    const sid = named(parseSid('HX', params.hx!), 'template SID');
    await deps.accounts.setDefaultTemplate(change, params.sid!, sid);
    return json(200, { defaultTemplateSid: sid });
  }),
  route('GET', '/services/:sid/rules', async (deps, { params }) =>
    json(200, rulesJson(await load(deps, params.sid!))),
  ),
  route('PUT', '/services/:sid/rules', async (deps, { params, body, change }) => {
    const rules = parse(schemas.rules, body);
    // The lists are whole, from the page's copy of the rules: made on an older copy, they would undo the changes
    // made since (another tab's, another member's, the admin command's).
    const service = await deps.accounts
      .setRules(
        change,
        params.sid!,
        {
          blockedCountries: rules.blockedCountries,
          blockedPrefixes: rules.blockedPrefixes.map((prefix) => valid(parseE164Prefix(prefix))),
          ...(rules.allowedCountries !== undefined && { allowedCountries: rules.allowedCountries }),
        },
        copyVersion(rules.rulesVersion),
      )
      .catch(refuseStale(STALE_RULES));
    return json(200, rulesJson(service));
  }),
  route('GET', '/services/:sid/guard', async (deps, { params }) =>
    json(200, await guardStatusJson(deps, params.sid!)),
  ),
  route('PUT', '/services/:sid/guard', async (deps, { params, body, change }) => {
    const input = parse(schemas.guard, body);
    const sid = params.sid!;
    // Checked before any change: a bad entry changes nothing.
    const safeList = input.safeList?.map((entry) => valid(parseE164Prefix(entry.trim())));
    // One write: the settings given and their audit records, all or none. The page sends them all from its copy:
    // made on an older one, they would undo the changes made since, as the rules would.
    const service = await deps.accounts
      .setGuardSettings(
        change,
        sid,
        {
          ...(input.level !== undefined && { level: input.level }),
          ...(safeList !== undefined && { safeList }),
          ...(input.riskCheckOptOut !== undefined && { riskCheckOptOut: input.riskCheckOptOut }),
        },
        copyVersion(input.guardVersion),
      )
      .catch(refuseStale(STALE_GUARD));
    return json(200, guardJson(service));
  }),
  route('POST', '/services/:sid/guard/unblock', async (deps, { params, body, change }) => {
    const { prefix: text } = parse(schemas.unblock, body);
    const prefix = text === '*' ? '*' : valid(parseE164Prefix(text.trim()));
    await load(deps, params.sid!);
    const until = new Date(deps.clock.now().getTime() + LIFT_MS);
    // The lift and its audit record in one write.
    const lifted = await deps.guard.unblock(params.sid!, prefix, until, (count) =>
      deps.accounts.changeRecord(change, params.sid!, 'guard.unblock', undefined, {
        prefix,
        lifted: count,
        until: until.toISOString(),
      }),
    );
    return json(200, { prefix, lifted, liftedUntil: until.toISOString() });
  }),
  route('GET', '/services/:sid/caps', async (deps, { params }) =>
    json(200, await capsJson(deps, await load(deps, params.sid!))),
  ),
  route('PUT', '/services/:sid/caps/:country', async (deps, { params, body, change }) => {
    const country = params.country!.toUpperCase();
    if (country !== ANY_COUNTRY && !COUNTRY_ROUTES[country]) {
      throw new HttpStatusError(400, 'invalid_parameter', `Not a served country: ${params.country!}`);
    }
    const input = parse(schemas.caps, body);
    const entry: CountryCaps = {};
    for (const field of CAP_FIELDS) {
      const value = input[field];
      if (value === undefined || value === null) continue;
      const problem = capProblem(field, value);
      if (problem) throw new HttpStatusError(400, 'invalid_parameter', `${field}: ${problem}.`);
      entry[field] = value;
    }
    // The service exists: the request's membership check read it (an operator's) or it has members.
    await deps.accounts.changeCountryCaps(change, params.sid!, country, () => entry);
    return json(200, await capsJson(deps, await load(deps, params.sid!)));
  }),
  route('GET', '/services/:sid/webhooks', async (deps, { params }) => {
    const [endpoints, deliveries] = await Promise.all([
      deps.webhooks.listEndpoints(params.sid!),
      deps.webhookDeliveries.recent(params.sid!),
    ]);
    return json(200, {
      max: MAX_WEBHOOK_ENDPOINTS_PER_SERVICE,
      endpoints: endpoints.sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map(webhookEndpointView),
      // Newest first, the latest RECENT_WEBHOOK_DELIVERIES attempts (kept 7 days).
      deliveries: deliveries.map(deliveryJson),
    });
  }),
  route('POST', '/services/:sid/webhooks', async (deps, { params, body, change }) => {
    const { url } = parse(schemas.webhook, body);
    const checked = checkWebhookUrl(url, { allowPrivate: deps.webhookAllowPrivate });
    if (!checked.ok)
      throw new HttpStatusError(400, 'invalid_parameter', `Not a webhook URL: ${checked.reason}`);
    const added = await deps.webhooks.addEndpoint(
      params.sid!,
      checked.url.toString(),
      await deps.webhookVault(),
      deps.random,
      deps.clock.now(),
    );
    if (!added.ok) {
      throw new HttpStatusError(
        409,
        'too_many',
        `A service has at most ${MAX_WEBHOOK_ENDPOINTS_PER_SERVICE} webhook endpoints.`,
      );
    }
    await deps.accounts.recordChange(change, params.sid!, 'webhook.add', undefined, {
      endpointSid: added.endpoint.sid,
      url: added.endpoint.url,
    });
    // The signing secret is shown once.
    return json(201, { ...webhookEndpointView(added.endpoint), secret: added.secret });
  }),
  route('POST', '/services/:sid/webhooks/:wh/rotate', async (deps, { params, body, change }) => {
    const sid = named(parseSid('WH', params.wh!), 'webhook SID');
    const { now: immediate } = parse(schemas.rotate, body ?? {});
    const secret = await deps.webhooks.rotateSecret(
      params.sid!,
      sid,
      await deps.webhookVault(),
      deps.clock.now(),
      {
        immediate: immediate === true,
      },
    );
    if (!secret) throw new HttpStatusError(404, 'not_found', 'No such webhook endpoint.');
    await deps.accounts.recordChange(change, params.sid!, 'webhook.rotate', undefined, {
      endpointSid: sid,
      immediate: immediate === true,
    });
    return json(200, { endpointSid: sid, secret });
  }),
  ...(['disable', 'enable'] as const).map((action) =>
    route('POST', `/services/:sid/webhooks/:wh/${action}`, async (deps, { params, change }) => {
      const sid = named(parseSid('WH', params.wh!), 'webhook SID');
      if (!(await deps.webhooks.setEnabled(params.sid!, sid, action === 'enable'))) {
        throw new HttpStatusError(404, 'not_found', 'No such webhook endpoint.');
      }
      await deps.accounts.recordChange(change, params.sid!, `webhook.${action}`, undefined, {
        endpointSid: sid,
      });
      return json(200, { endpointSid: sid, enabled: action === 'enable' });
    }),
  ),
  route(
    'POST',
    '/services/:sid/topup',
    async (deps, { params, body, change }) => {
      const { amount, key } = parse(schemas.topUp, body);
      valid(parseTopUp(amount));
      // `alreadyCredited`: a retry whose first try was credited (its answer lost) added nothing this time.
      const { balance, alreadyCredited } = await deps.accounts.topUp(change, params.sid!, amount, key);
      return json(200, { balance: formatUnits(balance), alreadyCredited });
    },
    { operatorOnly: true },
  ),
  route(
    'GET',
    '/services/:sid/members',
    async (deps, { params }) => json(200, { members: await deps.accounts.store.listMembers(params.sid!) }),
    { operatorOnly: true },
  ),
  route('GET', '/services/:sid/audit', async (deps, { params, query, user }) => {
    // A whole number from 1, at most MAX_AUDIT_RECORDS; anything else the default page. DynamoDB refuses a
    // fractional Limit, which would otherwise answer 500.
    const asked = Number(query.get('limit') ?? LIST_PAGE);
    const limit = Number.isInteger(asked) && asked >= 1 ? Math.min(asked, MAX_AUDIT_RECORDS) : LIST_PAGE;
    const records = await deps.accounts.auditTrail(params.sid!, limit);
    // The admin command's actor names the operator's login, host and AWS access key id (which names the AWS
    // account): the deployment's business, not its customers'. Members see the operator's changes as such.
    const shown = user.operator
      ? records
      : records.map((record) =>
          record.actor.startsWith('console:') ? record : { ...record, actor: 'operator' },
        );
    return json(200, { records: shown });
  }),
];

/** The API's routes (method, and path under `/console/api` with `:name` parameters), for tests to enumerate. */
export const CONSOLE_API_ROUTES: readonly { method: string; path: string }[] = API_ROUTES.map(
  ({ method, path }) => ({ method, path }),
);

const CONSOLE_PREFIX = '/console';
const API_PREFIX = `${CONSOLE_PREFIX}/api`;

/**
 * The strict policy of every console page: scripts and styles from the console's own files only (no inline
 * script or style, no eval), JSON from the same origin and from the sign-in service, nothing framed.
 */
function contentSecurityPolicy(connect: readonly string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${connect.map((origin) => ` ${origin}`).join('')}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const CONTENT_TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/**
 * Every answer of the console gets `nosniff`, errors included (the API's error middleware makes those), as the
 * pages and JSON always did.
 */
const addNoSniff = async (request: { response: HttpResponse | null }) => {
  if (request.response) request.response.headers['x-content-type-options'] = 'nosniff';
};
// Used first, so its onError runs last: after the error middleware has made the answer.
const noSniff = { after: addNoSniff, onError: addNoSniff };

/**
 * The handler of every console route: the API under `/console/api`, the files and their config elsewhere. It
 * wears the public API's middleware: one JSON error shape (with the spec's codes) and one request log line, which
 * names the console route, the user and the service.
 */
export function buildConsoleHandler(deps: ConsoleDeps) {
  const connect = deps.publicConfig.authOrigin ? [deps.publicConfig.authOrigin] : [];
  const pageHeaders = {
    'content-security-policy': contentSecurityPolicy(connect),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  };
  const handler = middy<APIGatewayProxyEventV2, HttpResponse, Error, ApiContext>()
    .use(noSniff)
    .use(requestLog(deps.logger))
    .use(errorResponses(deps.logger))
    .handler(async (event, context) => {
      const path = event.rawPath;
      const method = event.requestContext.http.method.toUpperCase();
      // The route, never the query (a search may be a phone number).
      context.route = `${method} ${path.startsWith(`${API_PREFIX}/`) ? API_PREFIX : CONSOLE_PREFIX}`;
      if (path.startsWith(`${API_PREFIX}/`)) {
        return serveApi(deps, event, context, method, path.slice(API_PREFIX.length));
      }
      return serveFile(deps, method, path, pageHeaders);
    });
  // The local stack and the tests call it without a Lambda context; the middleware writes to one.
  return (event: APIGatewayProxyEventV2, context?: ApiContext): Promise<HttpResponse> =>
    handler(event, context ?? ({} as ApiContext));
}

async function serveFile(
  deps: ConsoleDeps,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<HttpResponse> {
  if (method !== 'GET') throw new HttpStatusError(405, 'method_not_allowed', 'Method not allowed.');
  if (path === `${CONSOLE_PREFIX}/config.json`) {
    return json(200, deps.publicConfig, { 'cache-control': 'no-cache' });
  }
  const name =
    path === CONSOLE_PREFIX || path === `${CONSOLE_PREFIX}/`
      ? 'index.html'
      : path.slice(CONSOLE_PREFIX.length + 1);
  const { files } = await deps.assets();
  const content = Object.hasOwn(files, name) ? files[name] : undefined;
  if (content === undefined) throw new HttpStatusError(404, 'not_found', 'No such file.');
  return {
    statusCode: 200,
    headers: {
      ...headers,
      'content-type': CONTENT_TYPES[name.split('.').pop()!] ?? 'application/octet-stream',
      'cache-control': name === 'index.html' ? 'no-cache' : 'public, max-age=300',
    },
    body: content,
  };
}

/** A path parameter as the route names it; one that is not valid percent-encoding names nothing: 404. */
function decodeParameter(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new HttpStatusError(404, 'route_not_found', 'No such route.');
  }
}

async function serveApi(
  deps: ConsoleDeps,
  event: APIGatewayProxyEventV2,
  context: ApiContext,
  method: string,
  path: string,
): Promise<HttpResponse> {
  const claimed = userFromClaims(claimsOf(event));
  if (!claimed) throw new HttpStatusError(401, 'unauthorized', 'Sign in first.');
  context.userId = claimed.id;
  // The user's count and the reads that say what the user may do go together (one round trip, not two): they
  // change nothing, and nothing is answered before the count settles, so past the limit it is 429 whatever else.
  const [counted, allowed] = await Promise.allSettled([
    countUserRequest(deps, claimed.id),
    authorize(deps, claimed, method, path, context),
  ]);
  if (counted.status === 'rejected') throw counted.reason;
  if (allowed.status === 'rejected') throw allowed.reason;
  const { found, params, user } = allowed.value;
  const body = method === 'POST' || method === 'PUT' ? readJson(event) : undefined;
  const query = new URLSearchParams(event.rawQueryString ?? '');
  const change: ChangeContext = {
    actor: `console:${user.id}`,
    ...(event.requestContext.requestId && { requestId: event.requestContext.requestId }),
  };
  return found.r.handle(deps, { method, params, query, body, user, change });
}

/** The route a request names, its parameters, and the user as the table says now (operator or member of it). */
async function authorize(
  deps: ConsoleDeps,
  claimed: ConsoleUser,
  method: string,
  path: string,
  context: ApiContext,
): Promise<{ found: { r: ApiRoute; m: RegExpExecArray }; params: Params; user: ConsoleUser }> {
  const candidates = API_ROUTES.map((r) => ({ r, m: r.pattern.exec(path) })).filter(
    (c): c is { r: ApiRoute; m: RegExpExecArray } => c.m !== null,
  );
  const found = candidates.find((c) => c.r.method === method);
  if (!found) {
    throw candidates.length > 0
      ? new HttpStatusError(405, 'method_not_allowed', 'Method not allowed.')
      : new HttpStatusError(404, 'route_not_found', 'No such route.');
  }
  context.route = `${method} ${API_PREFIX}${found.r.path}`;
  const params: Params = {};
  found.r.names.forEach((name, i) => {
    params[name] = decodeParameter(found.m[i + 1]!);
  });
  // The sign-in group says who may be an operator; the table says who is one now (revoked at the next request).
  const user: ConsoleUser = {
    ...claimed,
    operator: claimed.operator && (await deps.accounts.store.isOperator(claimed.id)),
  };
  if (found.r.operatorOnly && !user.operator) {
    throw new HttpStatusError(403, 'forbidden', 'Only an operator may do this.');
  }
  if (found.r.service) {
    const sid = params.sid!;
    // The same answer whether the service exists or not, for a user who is not its member.
    if (!parseSid('VA', sid).ok) throw new HttpStatusError(403, 'forbidden', 'Not a service of yours.');
    if (!user.operator && !(await deps.accounts.store.isMember(user.id, sid))) {
      throw new HttpStatusError(403, 'forbidden', 'Not a service of yours.');
    }
    context.serviceSid = sid;
    // An operator may name any service: one that does not exist is not found (a member's always exists).
    if (user.operator) await load(deps, sid);
  }
  return { found, params, user };
}

/**
 * The per-user limit: every API request of a signed-in user, operator or member, whatever its route (a 404
 * too: it took its share of the route's throttle), counts in the user's fixed one-minute window, beside the reads
 * that authorize it and before anything is written or answered. API Gateway's throttle of the route is one bucket for every service's members and the
 * operators; this bounds what one user (a script with their token, a page left reloading in many tabs) takes of
 * it. Past the limit: 429 `rate_limited` with `Retry-After`, and nothing done.
 */
async function countUserRequest(deps: ConsoleDeps, userId: string): Promise<void> {
  const now = deps.clock.now().getTime();
  const window = minuteWindow(now);
  const limit = deps.settings.consoleRequestsPerMinute;
  if (await deps.requests.count(userId, new Date(window), limit)) return;
  const wait = secondsToNextWindow(window, now);
  throw new OtpError(
    'rate_limited',
    `Too many requests from you: at most ${limit} a minute. Try again in ${wait} second${wait === 1 ? '' : 's'}.`,
    wait,
  );
}

/** The claims API Gateway's JWT authorizer (or the local stack's stand-in) put on the event. */
function claimsOf(event: APIGatewayProxyEventV2): Record<string, unknown> | undefined {
  const context = event.requestContext as { authorizer?: { jwt?: { claims?: Record<string, unknown> } } };
  return context.authorizer?.jwt?.claims;
}

/**
 * The user of a request: `sub` is the id memberships are kept under; `cognito:groups` says whether it is an
 * operator. API Gateway hands array claims over as a string, `[operators other]`.
 */
function userFromClaims(claims: Record<string, unknown> | undefined): ConsoleUser | undefined {
  const sub = claims?.sub;
  if (typeof sub !== 'string' || !/^[A-Za-z0-9@._+:-]{1,128}$/.test(sub)) return undefined;
  const raw = claims!['cognito:groups'];
  const groups = Array.isArray(raw)
    ? raw.map(String)
    : typeof raw === 'string'
      ? raw
          .replace(/^\[|\]$/g, '')
          .split(/[\s,]+/)
          .filter(Boolean)
      : [];
  const email = claims!.email;
  return {
    id: sub,
    name: typeof email === 'string' ? email : sub,
    operator: groups.includes(OPERATOR_GROUP),
  };
}

function readJson(event: APIGatewayProxyEventV2): unknown {
  const contentType = (event.headers?.['content-type'] ?? '').toLowerCase();
  if (!event.body) return {};
  // JSON only: a form a cross-site page could post is refused (and it could not carry the token anyway).
  if (!contentType.startsWith('application/json')) {
    throw new HttpStatusError(415, 'invalid_parameter', 'Send JSON (Content-Type: application/json).');
  }
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (text.length > 16 * 1024) throw new HttpStatusError(400, 'invalid_parameter', 'The body is too large.');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpStatusError(400, 'invalid_parameter', 'The body is not JSON.');
  }
}

function parse<T extends z.ZodMiniType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new HttpStatusError(400, 'invalid_parameter', consoleIssueMessage(result.error.issues[0]!, body));
  }
  return result.data;
}

async function load(deps: ConsoleDeps, sid: string): Promise<Service> {
  const service = await deps.accounts.getService(sid);
  if (!service) throw new HttpStatusError(404, 'not_found', 'No such service.');
  return service;
}

const later = (now: Date) => new Date(now.getTime() + 60_000);

function days(query: URLSearchParams): number {
  const n = Number(query.get('days') ?? 30);
  return Number.isInteger(n) && n >= 1 && n <= 400 ? n : 30;
}

async function chargesWithCountries(
  deps: ConsoleDeps,
  sid: string,
  query: URLSearchParams,
): Promise<{ charges: ChargeLine[]; truncated: boolean; countries: Map<string, string | undefined> }> {
  const now = deps.clock.now();
  const from = new Date(now.getTime() - days(query) * 86_400_000);
  const { charges, truncated } = await deps.activity.charges(sid, { from, to: later(now) }, MAX_CHARGE_LINES);
  // The country is on the verification, kept a week past its expiry: older lines count as "unknown".
  const verifications = await deps.activity.verifications(
    charges.slice(0, MAX_VERIFICATIONS_READ).map((c) => c.verificationSid),
  );
  return { charges, truncated, countries: new Map(verifications.map((v) => [v.sid, v.country])) };
}

function listItem(v: Verification, now: Date): Record<string, unknown> {
  return {
    sid: v.sid,
    to: v.to,
    country: v.country ?? null,
    status: effectiveStatus(v, now),
    deliveryStatus: v.deliveryStatus,
    channel: v.channel,
    price: formatUnits(v.price),
    dateCreated: v.dateCreated,
  };
}

function serviceJson(service: Service) {
  return {
    sid: service.sid,
    name: service.name,
    balance: formatUnits(service.balance),
    channels: service.enabledChannels,
    /** What a change made on these channels sends back, as `rulesVersion` for the rules. */
    channelsVersion: service.channelsVersion ?? 0,
    allChannels: CHANNELS,
    defaultTemplate: service.defaultTemplate ?? null,
    createdAt: service.createdAt,
    ...rulesJson(service),
    ...guardJson(service),
  };
}

const highRiskJson = (entries: HighRiskCountry[]) =>
  entries.map(({ country, name, reason, sources }) => ({ country, name, reason, sources }));

/** A change from a page that sends no version: loaded before the console sent it. */
const STALE_PAGE =
  'This page was loaded before the console was updated: reload it, then make the change again.';

/** The refusals of a change made on an older copy, in the words of the page that made it. */
const STALE_RULES = 'The rules changed since this page was loaded: reload to see them.';
const STALE_GUARD = 'The guard settings changed since this page was loaded: reload to see them.';
const STALE_CHANNELS = 'The channels changed since this page was loaded: reload to see them.';

/** The version of the copy a change was made on; none, the page is older than the versions: 409, reload. */
function copyVersion(version: number | undefined): number {
  if (version === undefined) throw new HttpStatusError(409, 'conflict', STALE_PAGE);
  return version;
}

/** The core's refusal of a change made on an older copy (`conflict`), said as `message`: 409, nothing changed. */
const refuseStale =
  (message: string) =>
  (error: unknown): never => {
    if (error instanceof OtpError && error.code === 'conflict')
      throw new HttpStatusError(409, 'conflict', message);
    throw error;
  };

const rulesJson = (service: Service) => ({
  /** What a change made on these lists sends back: the rules' version now. */
  rulesVersion: service.rulesVersion ?? 0,
  blockedCountries: service.rules.blockedCountries,
  blockedPrefixes: service.rules.blockedPrefixes,
  /** null: no allow-list, the service sends to every served country. */
  allowedCountries: service.rules.allowedCountries ?? null,
  /** The high-risk countries the allow-list leaves out, with why and the sources. */
  excludedHighRiskCountries: highRiskJson(excludedHighRisk(service.rules.allowedCountries)),
  /** What "reset to default" sets, and the whole high-risk list it leaves out. */
  defaultAllowedCountries: defaultAllowedCountries(),
  highRiskCountries: highRiskJson([...HIGH_RISK_COUNTRIES]),
  servedCountries: Object.keys(COUNTRY_ROUTES).sort(),
});

const capAmount = (spend: boolean, value: number) => (spend ? formatUnits(value) : value);

/** The caps as the page shows them (spend as USD strings, null: no cap) and the caps reached now. */
async function capsJson(deps: ConsoleDeps, service: Service) {
  const caps = service.guard?.caps;
  const reached: CapBlock[] = await deps.guard.capsReached(service.sid, deps.clock.now());
  return {
    caps: capCountries(caps).map((country) => ({
      country,
      ...Object.fromEntries(
        CAP_FIELDS.map((field) => {
          const value = caps![country]![field];
          return [field, value === undefined ? null : capAmount(isSpendCap(field), value)];
        }),
      ),
    })),
    reached: reached.map((r) => ({
      country: r.country,
      cap: r.cap,
      limit: capAmount(r.spend, r.limit),
      value: capAmount(r.spend, r.value),
      since: new Date(r.since).toISOString(),
      until: new Date(r.until).toISOString(),
    })),
    capNames: CAP_NAMES,
    servedCountries: Object.keys(COUNTRY_ROUTES).sort(),
  };
}

const guardJson = (service: Service) => ({
  /** What a change made on these settings sends back, as `rulesVersion` for the rules. */
  guardVersion: service.guardVersion ?? 0,
  guardLevel: service.guard?.level ?? DEFAULT_GUARD_SETTINGS.level,
  guardLevels: GUARD_LEVELS,
  safeList: service.guard?.safeList ?? [],
  riskCheckOptOut: service.guard?.riskCheckOptOut === true,
});

/** Decisions by prefix and reason the page lists, the most sends first. */
const GUARD_DECISIONS_SHOWN = 20;

/**
 * The guard of a service now: its settings, the blocks that refuse its sends (global ones only where they apply to
 * it: what other services' traffic shows is theirs), its decisions by prefix and reason, and what its blocks saved.
 */
async function guardStatusJson(deps: ConsoleDeps, sid: string) {
  const service = await load(deps, sid);
  const overview = await deps.guard.overview(sid);
  const now = deps.clock.now().getTime();
  const blocks = overview ? blocksInForce(overview, sid, now).filter((b) => b.applies) : [];
  const lines = [...(overview?.report.lines ?? [])].sort((a, b) => b.sends - a.sends);
  return {
    ...guardJson(service),
    blocks: blocks.map((b) => ({
      blocked: b.blocked,
      liftWith: b.liftWith,
      reason: b.reason,
      level: b.level,
      scope: b.scope,
      until: new Date(b.until).toISOString(),
      figures: b.figures,
    })),
    // Nothing refused for these: the owner is told the country's codes went unchecked (a slow attack, or codes
    // not arriving).
    conversionDrops: (overview ? conversionDrops(overview, now) : []).map((d) => ({
      country: d.country,
      at: new Date(d.since).toISOString(),
      codesSent: d.figures.sends_60m,
      codesChecked: d.figures.checked_60m,
      usualConversion: d.figures.usual_conversion,
      ranges: dropRanges(d.figures),
    })),
    saved: formatUnits(lines.reduce((sum, line) => sum + line.saved, 0)),
    // The latest decisions, newest first: which numbers (all but their last 3 digits) were refused, and why.
    recent: [...(overview?.report.recent ?? [])]
      .reverse()
      .slice(0, GUARD_DECISIONS_SHOWN)
      .map((d) => ({
        at: new Date(d.at).toISOString(),
        mode: d.mode,
        reason: d.reason,
        number: `${d.e164Prefix}xxx`,
        prefix: d.prefix,
        scope: d.scope,
      })),
    decisions: lines.slice(0, GUARD_DECISIONS_SHOWN).map((l) => ({
      mode: l.mode,
      reason: l.reason,
      prefix: l.prefix,
      sends: l.sends,
      saved: formatUnits(l.saved),
    })),
  };
}
