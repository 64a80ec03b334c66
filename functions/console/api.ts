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
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod/mini';
import { en } from 'zod/locales';
import type { AccountStore } from '../adapters/dynamodb/accounts';
import type { ActivityReader } from '../adapters/dynamodb/activity';
import type { CapBlock, DynamoGuardAdmin } from '../adapters/dynamodb/guard';
import type { DynamoWebhookDeliveries, DynamoWebhookEndpoints } from '../adapters/dynamodb/webhooks';
import type { WebhookSecretVault } from '../adapters/webhooks/secrets';
import type { Logger } from '../adapters/logger';
import {
  HIGH_RISK_COUNTRIES,
  defaultAllowedCountries,
  excludedHighRisk,
  type HighRiskCountry,
} from '../core/guard/high-risk-countries';
import {
  ANY_COUNTRY,
  CAP_FIELDS,
  CAP_NAMES,
  capCountries,
  capProblem,
  isSpendCap,
  withCountryCaps,
} from '../core/guard/caps';
import { DEFAULT_GUARD_SETTINGS, type CountryCaps } from '../core/guard/model';
import type { Service, Verification } from '../core/model';
import { effectiveStatus } from '../core/verification';
import { UNITS_PER_USD, formatUnits, parseUsd } from '../core/money';
import type { Clock, Random } from '../core/ports';
import { CHANNELS, ROUTES as COUNTRY_ROUTES, type Channel } from '../core/routing';
import type { Settings } from '../core/settings';
import {
  MAX_WEBHOOK_ENDPOINTS_PER_SERVICE,
  checkWebhookUrl,
  webhookEndpointView,
  type WebhookDeliveryRecord,
} from '../core/webhooks';
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
  accounts: Pick<
    AccountStore,
    | 'getService'
    | 'createService'
    | 'issueApiKey'
    | 'listApiKeysWithUse'
    | 'revokeApiKey'
    | 'topUp'
    | 'addTemplate'
    | 'listTemplates'
    | 'setDefaultTemplate'
    | 'setChannels'
    | 'setRules'
    | 'setAllowedCountries'
    | 'setRiskCheckOptOut'
    | 'setGuardCaps'
    | 'membershipsOf'
    | 'isMember'
    | 'listAllServices'
    | 'listMembers'
  >;
  activity: Pick<ActivityReader, 'charges' | 'verifications' | 'verification'>;
  /** The caps reached now (the guard consumer's `country_cap` blocks). */
  guard: Pick<DynamoGuardAdmin, 'capsReached'>;
  webhooks: Pick<DynamoWebhookEndpoints, 'listEndpoints' | 'addEndpoint' | 'setEnabled' | 'rotateSecret'>;
  /** The webhook sender's delivery records (one per attempt, 7 days). */
  webhookDeliveries: Pick<DynamoWebhookDeliveries, 'recent' | 'forVerification'>;
  /** Seals webhook signing secrets with the function's webhook key (on a cold start, once its secret is read). */
  webhookVault: () => Promise<WebhookSecretVault>;
  random: Random;
  clock: Clock;
  settings: Pick<Settings, 'maxCheckAttempts' | 'channelWaitSeconds'>;
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

class ConsoleError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const SERVICE_SID = /^VA[0-9a-f]{32}$/;
const VERIFICATION_SID = /^VE[0-9a-f]{32}$/;
const TEMPLATE_SID = /^HX[0-9a-f]{32}$/;
const WEBHOOK_SID = /^WH[0-9a-f]{32}$/;
const KEY_ID = /^[0-9a-f]{12}$/;

/*
 * zod's functional API (`zod/mini`): the console's bundle carries only the checks it uses (a fraction of classic
 * zod's size and require time; docs/bench.md). Its messages are answered to the page, so the English
 * ones classic zod sets by default are set here too.
 */
z.config(en());

const usd = z.pipe(
  z.string().check(z.maxLength(20)),
  z.transform((text: string, ctx) => {
    const units = parseUsd(text);
    if (units === undefined) {
      ctx.issues.push({ code: 'custom', message: 'an amount in USD with at most 4 decimals', input: text });
      return z.NEVER;
    }
    return units;
  }),
);
const channelList = z.array(z.enum(CHANNELS)).check(z.minLength(1), z.maxLength(CHANNELS.length));
const countryList = z
  .array(
    z.pipe(
      z.string().check(z.regex(/^[A-Za-z]{2}$/)),
      z.transform((c: string) => c.toUpperCase()),
    ),
  )
  .check(z.maxLength(250));
const schemas = {
  createService: z.object({
    name: z.string().check(z.trim(), z.minLength(1), z.maxLength(100)),
    balance: z.optional(usd),
    channels: z.optional(channelList),
  }),
  topUp: z.object({ amount: usd }),
  channels: z.object({ channels: channelList }),
  template: z.object({
    body: z.string().check(
      z.minLength(1),
      z.maxLength(1000),
      z.refine((body) => body.includes('{code}'), 'the text must contain {code}'),
    ),
    locale: z.optional(z.string().check(z.regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/))),
    default: z.optional(z.boolean()),
  }),
  rules: z.object({
    blockedCountries: countryList,
    blockedPrefixes: z.array(z.string().check(z.regex(/^\+[1-9]\d{0,14}$/))).check(z.maxLength(100)),
    /** Absent: unchanged. null: no allow-list (every served country). A list, empty included: that list. */
    allowedCountries: z.optional(z.nullable(countryList)),
  }),
  guard: z.object({ riskCheckOptOut: z.boolean() }),
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
}
type Handler = (deps: ConsoleDeps, request: Request) => Promise<HttpResponse>;
interface ApiRoute {
  method: string;
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
  return { method, pattern, names, service: names.includes('sid'), handle, ...options };
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
      ? (await deps.accounts.listAllServices()).map((s) => ({ sid: s.serviceSid, name: s.name }))
      : (await deps.accounts.membershipsOf(user.id)).map((m) => ({ sid: m.serviceSid, name: m.serviceName }));
    return json(200, { user: { id: user.id, name: user.name, operator: user.operator }, services });
  }),
  route(
    'POST',
    '/services',
    async (deps, { body }) => {
      const input = parse(schemas.createService, body);
      const service = await deps.accounts.createService({
        name: input.name,
        balance: input.balance ?? 0,
        channels: input.channels ?? [...CHANNELS],
        defaultTemplateBody: `Your ${input.name} verification code is {code}.`,
      });
      return json(201, serviceJson(service));
    },
    { operatorOnly: true },
  ),
  route('GET', '/services/:sid', async (deps, { params }) =>
    json(200, serviceJson(await load(deps, params.sid!))),
  ),
  route('PUT', '/services/:sid/channels', async (deps, { params, body }) => {
    const { channels } = parse(schemas.channels, body);
    await deps.accounts.setChannels(params.sid!, channels as Channel[]);
    return json(200, serviceJson(await load(deps, params.sid!)));
  }),
  route('GET', '/services/:sid/keys', async (deps, { params }) => {
    const keys = await deps.accounts.listApiKeysWithUse(params.sid!);
    keys.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    return json(200, { keys: keys.map((key) => ({ ...key, active: !key.revokedAt })) });
  }),
  route('POST', '/services/:sid/keys', async (deps, { params }) => {
    const issued = await deps.accounts.issueApiKey(params.sid!, deps.clock.now());
    // Shown once: the answer is never cached, and only the key's hash is stored.
    return json(201, { keyId: issued.keyId, apiKey: issued.apiKey });
  }),
  route('POST', '/services/:sid/keys/:keyId/revoke', async (deps, { params }) => {
    const keyId = match(params.keyId!, KEY_ID, 'key id');
    const keys = await deps.accounts.listApiKeysWithUse(params.sid!);
    const key = keys.find((candidate) => candidate.keyId === keyId);
    if (!key) throw new ConsoleError(404, 'not_found', 'No such API key.');
    if (key.revokedAt) return json(200, { keyId, revokedAt: key.revokedAt, alreadyRevoked: true });
    const now = deps.clock.now();
    await deps.accounts.revokeApiKey(params.sid!, keyId, now);
    return json(200, { keyId, revokedAt: now.toISOString(), alreadyRevoked: false });
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
    if (VERIFICATION_SID.test(search)) {
      const found = await deps.activity.verification(search);
      const mine = found && found.serviceSid === params.sid ? [found] : [];
      return json(200, { verifications: mine.map((v) => listItem(v, now)), searchedLatest: null });
    }
    const number = search.replace(/[\s()-]/g, '');
    if (search !== '' && !/^\+?\d{3,15}$/.test(number)) {
      throw new ConsoleError(400, 'invalid_parameter', 'Search by a VE… SID or a phone number (digits).');
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
    });
  }),
  route('GET', '/services/:sid/verifications/:ve', async (deps, { params }) => {
    const sid = match(params.ve!, VERIFICATION_SID, 'verification SID');
    const found = await deps.activity.verification(sid);
    // Another service's verification is as absent as a missing one.
    if (!found || found.serviceSid !== params.sid)
      throw new ConsoleError(404, 'not_found', 'No such verification.');
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
    const [service, templates] = await Promise.all([
      load(deps, params.sid!),
      deps.accounts.listTemplates(params.sid!),
    ]);
    return json(200, {
      defaultTemplateSid: service.defaultTemplate?.sid ?? null,
      templates: templates.map((t) => ({ ...t, default: t.sid === service.defaultTemplate?.sid })),
    });
  }),
  route('POST', '/services/:sid/templates', async (deps, { params, body }) => {
    const input = parse(schemas.template, body);
    const template = await deps.accounts.addTemplate(params.sid!, input.body, input.locale ?? 'en');
    if (input.default) await deps.accounts.setDefaultTemplate(params.sid!, template.sid);
    return json(201, { ...template, default: input.default === true });
  }),
  route('POST', '/services/:sid/templates/:hx/default', async (deps, { params }) => {
    const sid = match(params.hx!, TEMPLATE_SID, 'template SID');
    const templates = await deps.accounts.listTemplates(params.sid!);
    if (!templates.some((t) => t.sid === sid)) throw new ConsoleError(404, 'not_found', 'No such template.');
    await deps.accounts.setDefaultTemplate(params.sid!, sid);
    return json(200, { defaultTemplateSid: sid });
  }),
  route('GET', '/services/:sid/rules', async (deps, { params }) =>
    json(200, rulesJson(await load(deps, params.sid!))),
  ),
  route('PUT', '/services/:sid/rules', async (deps, { params, body }) => {
    const rules = parse(schemas.rules, body);
    const unknown = [...rules.blockedCountries, ...(rules.allowedCountries ?? [])].filter(
      (c) => !COUNTRY_ROUTES[c],
    );
    if (unknown.length > 0) {
      throw new ConsoleError(400, 'invalid_parameter', `Not a served country: ${unknown.join(', ')}`);
    }
    await deps.accounts.setRules(params.sid!, {
      blockedCountries: [...new Set(rules.blockedCountries)].sort(),
      blockedPrefixes: [...new Set(rules.blockedPrefixes)].sort(),
    });
    if (rules.allowedCountries !== undefined) {
      await deps.accounts.setAllowedCountries(params.sid!, rules.allowedCountries ?? undefined);
    }
    return json(200, rulesJson(await load(deps, params.sid!)));
  }),
  route('PUT', '/services/:sid/guard', async (deps, { params, body }) => {
    const { riskCheckOptOut } = parse(schemas.guard, body);
    await load(deps, params.sid!);
    await deps.accounts.setRiskCheckOptOut(params.sid!, riskCheckOptOut);
    return json(200, guardJson(await load(deps, params.sid!)));
  }),
  route('GET', '/services/:sid/caps', async (deps, { params }) =>
    json(200, await capsJson(deps, await load(deps, params.sid!))),
  ),
  route('PUT', '/services/:sid/caps/:country', async (deps, { params, body }) => {
    const country = params.country!.toUpperCase();
    if (country !== ANY_COUNTRY && !COUNTRY_ROUTES[country]) {
      throw new ConsoleError(400, 'invalid_parameter', `Not a served country: ${params.country!}`);
    }
    const input = parse(schemas.caps, body);
    const entry: CountryCaps = {};
    for (const field of CAP_FIELDS) {
      const value = input[field];
      if (value === undefined || value === null) continue;
      const problem = capProblem(field, value);
      if (problem) throw new ConsoleError(400, 'invalid_parameter', `${field}: ${problem}.`);
      entry[field] = value;
    }
    const service = await load(deps, params.sid!);
    await deps.accounts.setGuardCaps(params.sid!, withCountryCaps(service.guard?.caps, country, entry));
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
  route('POST', '/services/:sid/webhooks', async (deps, { params, body }) => {
    const { url } = parse(schemas.webhook, body);
    const checked = checkWebhookUrl(url, { allowPrivate: deps.webhookAllowPrivate });
    if (!checked.ok) throw new ConsoleError(400, 'invalid_parameter', `Not a webhook URL: ${checked.reason}`);
    const added = await deps.webhooks.addEndpoint(
      params.sid!,
      checked.url.toString(),
      await deps.webhookVault(),
      deps.random,
      deps.clock.now(),
    );
    if (!added.ok) {
      throw new ConsoleError(
        409,
        'too_many',
        `A service has at most ${MAX_WEBHOOK_ENDPOINTS_PER_SERVICE} webhook endpoints.`,
      );
    }
    // The signing secret is shown once.
    return json(201, { ...webhookEndpointView(added.endpoint), secret: added.secret });
  }),
  route('POST', '/services/:sid/webhooks/:wh/rotate', async (deps, { params, body }) => {
    const sid = match(params.wh!, WEBHOOK_SID, 'webhook SID');
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
    if (!secret) throw new ConsoleError(404, 'not_found', 'No such webhook endpoint.');
    return json(200, { endpointSid: sid, secret });
  }),
  ...(['disable', 'enable'] as const).map((action) =>
    route('POST', `/services/:sid/webhooks/:wh/${action}`, async (deps, { params }) => {
      const sid = match(params.wh!, WEBHOOK_SID, 'webhook SID');
      if (!(await deps.webhooks.setEnabled(params.sid!, sid, action === 'enable'))) {
        throw new ConsoleError(404, 'not_found', 'No such webhook endpoint.');
      }
      return json(200, { endpointSid: sid, enabled: action === 'enable' });
    }),
  ),
  route(
    'POST',
    '/services/:sid/topup',
    async (deps, { params, body }) => {
      const { amount } = parse(schemas.topUp, body);
      if (amount <= 0 || amount > 1_000_000 * UNITS_PER_USD) {
        throw new ConsoleError(
          400,
          'invalid_parameter',
          'A top-up is more than 0 and at most 1,000,000 USD.',
        );
      }
      return json(200, { balance: formatUnits(await deps.accounts.topUp(params.sid!, amount)) });
    },
    { operatorOnly: true },
  ),
  route(
    'GET',
    '/services/:sid/members',
    async (deps, { params }) => json(200, { members: await deps.accounts.listMembers(params.sid!) }),
    { operatorOnly: true },
  ),
];

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

/** The handler of every console route: the API under `/console/api`, the files and their config elsewhere. */
export function buildConsoleHandler(deps: ConsoleDeps) {
  const connect = deps.publicConfig.authOrigin ? [deps.publicConfig.authOrigin] : [];
  const pageHeaders = {
    'content-security-policy': contentSecurityPolicy(connect),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  };
  return async (event: APIGatewayProxyEventV2): Promise<HttpResponse> => {
    const path = event.rawPath;
    const method = event.requestContext.http.method.toUpperCase();
    const started = performance.now();
    let response: HttpResponse;
    try {
      if (path.startsWith(`${API_PREFIX}/`)) {
        response = await serveApi(deps, event, method, path.slice(API_PREFIX.length));
      } else {
        response = await serveFile(deps, method, path, pageHeaders);
      }
    } catch (error) {
      response = errorResponse(deps.logger, event, error);
    }
    deps.logger.log('info', 'console.request', {
      requestId: event.requestContext.requestId,
      method,
      // The route, never the query (a search may be a phone number).
      path: path.replace(/[0-9a-f]{32}/g, '…'),
      status: response.statusCode,
      durationMs: Math.round(performance.now() - started),
    });
    return response;
  };
}

async function serveFile(
  deps: ConsoleDeps,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<HttpResponse> {
  if (method !== 'GET') throw new ConsoleError(405, 'method_not_allowed', 'Method not allowed.');
  if (path === `${CONSOLE_PREFIX}/config.json`) {
    return json(200, deps.publicConfig, { 'cache-control': 'no-cache' });
  }
  const name =
    path === CONSOLE_PREFIX || path === `${CONSOLE_PREFIX}/`
      ? 'index.html'
      : path.slice(CONSOLE_PREFIX.length + 1);
  const { files } = await deps.assets();
  const content = Object.hasOwn(files, name) ? files[name] : undefined;
  if (content === undefined) throw new ConsoleError(404, 'not_found', 'No such file.');
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

async function serveApi(
  deps: ConsoleDeps,
  event: APIGatewayProxyEventV2,
  method: string,
  path: string,
): Promise<HttpResponse> {
  const user = userFromClaims(claimsOf(event));
  if (!user) throw new ConsoleError(401, 'unauthorized', 'Sign in first.');
  const candidates = API_ROUTES.map((r) => ({ r, m: r.pattern.exec(path) })).filter((c) => c.m);
  const found = candidates.find((c) => c.r.method === method);
  if (!found) {
    throw candidates.length > 0
      ? new ConsoleError(405, 'method_not_allowed', 'Method not allowed.')
      : new ConsoleError(404, 'route_not_found', 'No such route.');
  }
  const params: Params = {};
  found.r.names.forEach((name, i) => {
    params[name] = decodeURIComponent(found.m![i + 1]!);
  });
  if (found.r.operatorOnly && !user.operator) {
    throw new ConsoleError(403, 'forbidden', 'Only an operator may do this.');
  }
  if (found.r.service) {
    const sid = params.sid!;
    // The same answer whether the service exists or not, for a user who is not its member.
    if (!SERVICE_SID.test(sid)) throw new ConsoleError(403, 'forbidden', 'Not a service of yours.');
    if (!user.operator && !(await deps.accounts.isMember(user.id, sid))) {
      throw new ConsoleError(403, 'forbidden', 'Not a service of yours.');
    }
    // An operator may name any service: one that does not exist is not found (a member's always exists).
    if (user.operator) await load(deps, sid);
  }
  const body = method === 'POST' || method === 'PUT' ? readJson(event) : undefined;
  const query = new URLSearchParams(event.rawQueryString ?? '');
  return found.r.handle(deps, { method, params, query, body, user });
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
    throw new ConsoleError(415, 'invalid_parameter', 'Send JSON (Content-Type: application/json).');
  }
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (text.length > 16 * 1024) throw new ConsoleError(400, 'invalid_parameter', 'The body is too large.');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ConsoleError(400, 'invalid_parameter', 'The body is not JSON.');
  }
}

function parse<T extends z.ZodMiniType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const where = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    throw new ConsoleError(400, 'invalid_parameter', `${where}${issue.message}`);
  }
  return result.data;
}

function match(value: string, pattern: RegExp, what: string): string {
  if (!pattern.test(value)) throw new ConsoleError(404, 'not_found', `No such ${what}.`);
  return value;
}

async function load(deps: ConsoleDeps, sid: string): Promise<Service> {
  const service = await deps.accounts.getService(sid);
  if (!service) throw new ConsoleError(404, 'not_found', 'No such service.');
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
    allChannels: CHANNELS,
    defaultTemplate: service.defaultTemplate ?? null,
    createdAt: service.createdAt,
    ...rulesJson(service),
    ...guardJson(service),
  };
}

const highRiskJson = (entries: HighRiskCountry[]) =>
  entries.map(({ country, name, reason, sources }) => ({ country, name, reason, sources }));

const rulesJson = (service: Service) => ({
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
  guardLevel: service.guard?.level ?? DEFAULT_GUARD_SETTINGS.level,
  riskCheckOptOut: service.guard?.riskCheckOptOut === true,
});

function errorResponse(logger: Logger, event: APIGatewayProxyEventV2, error: unknown): HttpResponse {
  if (error instanceof ConsoleError) return json(error.status, { code: error.code, message: error.message });
  logger.log('error', 'console.failed', {
    requestId: event.requestContext.requestId,
    errorName: error instanceof Error ? error.name : 'unknown',
    error: error instanceof Error ? error : String(error),
  });
  return json(500, { code: 'internal_error', message: 'Internal error.' });
}
