/**
 * Every admin command: its words, arguments and options, the parsing of its arguments (no I/O, so a bad
 * command line fails before anything is read or written), and what it asks the account store to do.
 */
import type { AccountStore } from '../../functions/adapters/dynamodb/accounts';
import type { DynamoWebhookEndpoints } from '../../functions/adapters/dynamodb/webhooks';
import type { WebhookSecretVault } from '../../functions/adapters/webhooks/secrets';
import { formatUnits } from '../../functions/core/money';
import type { Service } from '../../functions/core/model';
import { CHANNELS, ROUTES } from '../../functions/core/routing';
import { MAX_WEBHOOK_ENDPOINTS_PER_SERVICE, type WebhookEndpoint } from '../../functions/core/webhooks';
import { list, rows, serviceJson, serviceText, table, templateText, usd } from './format';
import { cryptoRandom } from '../../functions/adapters/crypto';
import * as parse from './validate';
import { AdminError, UsageError } from './validate';

/** Every option any command takes; `parseArgs` needs them all to tell option values from positionals. */
export const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  endpoint: { type: 'string' },
  table: { type: 'string' },
  region: { type: 'string' },
  name: { type: 'string' },
  balance: { type: 'string' },
  channels: { type: 'string' },
  template: { type: 'string' },
  'no-default-template': { type: 'boolean' },
  'no-key': { type: 'boolean' },
  default: { type: 'boolean' },
  locale: { type: 'string' },
  'secret-arn': { type: 'string' },
  now: { type: 'boolean' },
} as const;

export type OptionName = keyof typeof OPTIONS;
export type OptionValues = {
  [K in OptionName]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean;
};

/** Options every command accepts. */
export const GLOBAL_OPTIONS: readonly OptionName[] = ['json', 'help', 'endpoint', 'table', 'region'];

export interface CommandContext {
  accounts: AccountStore;
  webhooks: DynamoWebhookEndpoints;
  /** Seals webhook secrets; needs the deployment's master key, so it is loaded only by the commands that make one. */
  webhookVault: () => Promise<WebhookSecretVault>;
  /** Where the command ran, for messages: "table otp-local at http://127.0.0.1:8000". */
  targetDescription: string;
}

export interface CommandOutput {
  /** What `--json` prints: one JSON value. */
  json: unknown;
  /** What a person reads. */
  text: string;
}

export interface Command {
  words: readonly string[];
  /** Positional arguments after the words, e.g. `<VA>`. */
  args: readonly string[];
  /** Options of this command besides the global ones, as shown in the usage line. */
  optionsUsage?: string;
  options: readonly OptionName[];
  summary: string;
  /** Longer notes for `help <command>`. */
  details?: readonly string[];
  examples: readonly string[];
  /** Validates the arguments; the returned function does the work. */
  prepare(args: string[], values: OptionValues): (context: CommandContext) => Promise<CommandOutput>;
}

interface CommandSpec<Input> extends Omit<Command, 'prepare' | 'options'> {
  options?: readonly OptionName[];
  parse(args: string[], values: OptionValues): Input;
  run(context: CommandContext, input: Input): Promise<CommandOutput>;
}

function command<Input>(spec: CommandSpec<Input>): Command {
  const { parse: parseInput, run, ...meta } = spec;
  return {
    ...meta,
    options: spec.options ?? [],
    prepare: (args, values) => {
      const input = parseInput(args, values);
      return (context) => run(context, input);
    },
  };
}

export const usageLine = (command: Command): string =>
  [
    'npm run admin --',
    ...command.words,
    ...command.args,
    ...(command.optionsUsage ? [command.optionsUsage] : []),
  ].join(' ');

async function loadService(context: CommandContext, serviceSid: string): Promise<Service> {
  const service = await context.accounts.getService(serviceSid);
  if (!service) throw new AdminError(`No service ${serviceSid} in ${context.targetDescription}`);
  return service;
}

/** Most commands take just the Service SID. */
const sidOnly = ([sid]: string[]) => parse.serviceSid(sid!);

const VA = 'VA0123456789abcdef0123456789abcdef';
const HX = 'HX0123456789abcdef0123456789abcdef';

// --- services -------------------------------------------------------------------------------------------

const serviceCreate = command({
  words: ['service', 'create'],
  args: [],
  options: ['name', 'balance', 'channels', 'template', 'no-default-template', 'no-key'],
  optionsUsage:
    '--name NAME [--balance USD] [--channels LIST] [--template TEXT | --no-default-template] [--no-key]',
  summary: 'Create a service and issue its first API key',
  details: [
    '--balance USD defaults to 0; --channels defaults to all five channels.',
    'The default template is --template TEXT, or "Your NAME verification code is {code}." when not given;',
    '--no-default-template creates none (sends must then name a TemplateSid). --no-key issues no API key.',
  ],
  examples: [
    'service create --name Acme --balance 25',
    'service create --name Acme --balance 25 --channels sms,whatsapp --template "Your Acme code is {code}"',
    'service create --name Acme --no-default-template --no-key',
  ],
  parse: (_args, values) => {
    if (values.name === undefined) throw new UsageError('service create needs --name NAME');
    if (values.template !== undefined && values['no-default-template']) {
      throw new UsageError('Give either --template TEXT or --no-default-template, not both');
    }
    const name = parse.serviceName(values.name);
    return {
      name,
      balance: values.balance === undefined ? 0 : parse.usd(values.balance, 'Balance'),
      channels: values.channels === undefined ? [...CHANNELS] : parse.channels(values.channels),
      // Without a default template every send would need a TemplateSid, so one is made unless refused.
      defaultTemplateBody: values['no-default-template']
        ? undefined
        : parse.templateBody(values.template ?? `Your ${name} verification code is {code}.`),
      issueKey: !values['no-key'],
    };
  },
  run: async ({ accounts }, { issueKey, ...input }) => {
    const service = await accounts.createService(input);
    const key = issueKey ? await accounts.issueApiKey(service.sid) : undefined;
    return {
      json: { ...serviceJson(service), ...(key && { apiKey: key.apiKey, keyId: key.keyId }) },
      text: [
        `Created service ${service.name}.`,
        serviceText(service),
        ...(key
          ? ['', keyText(key.apiKey, key.keyId)]
          : ['', `No API key yet: npm run admin -- key issue ${service.sid}`]),
      ].join('\n'),
    };
  },
});

const serviceShow = command({
  words: ['service', 'show'],
  args: ['<VA>'],
  summary: 'Show a service: balance, channels, default template, rules, prices',
  examples: [`service show ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    return { json: serviceJson(service), text: serviceText(service) };
  },
});

// --- API keys -------------------------------------------------------------------------------------------

const keyText = (apiKey: string, keyId: string) =>
  rows([
    ['API key', `${apiKey}   (shown once: store it now)`],
    ['Key id', `${keyId}   (for key list and key revoke)`],
  ]);

const keyIssue = command({
  words: ['key', 'issue'],
  args: ['<VA>'],
  summary: 'Issue an API key (shown once; only its hash is stored)',
  examples: [`key issue ${VA}`, `key issue ${VA} --json | jq -r .apiKey`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const { apiKey, keyId } = await context.accounts.issueApiKey(sid);
    return { json: { serviceSid: sid, keyId, apiKey }, text: keyText(apiKey, keyId) };
  },
});

const keyList = command({
  words: ['key', 'list'],
  args: ['<VA>'],
  summary: "List a service's API keys by id",
  examples: [`key list ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const keys = (await context.accounts.listApiKeys(sid)).sort((a, b) =>
      a.createdAt.localeCompare(b.createdAt),
    );
    return {
      json: {
        serviceSid: sid,
        keys: keys.map((key) => ({ ...key, revokedAt: key.revokedAt ?? null, active: !key.revokedAt })),
      },
      text:
        keys.length === 0
          ? 'No API keys.'
          : table(
              ['Key id', 'Created', 'Status'],
              keys.map((key) => [
                key.keyId,
                key.createdAt,
                key.revokedAt ? `revoked ${key.revokedAt}` : 'active',
              ]),
            ),
    };
  },
});

const keyRevoke = command({
  words: ['key', 'revoke'],
  args: ['<VA>', '<keyId>'],
  summary: 'Revoke an API key by its whole id (the next request with it is refused)',
  examples: [`key revoke ${VA} 3f2a9c41d07e`],
  parse: ([sid, id]) => ({ sid: parse.serviceSid(sid!), keyId: parse.keyId(id!) }),
  run: async (context, { sid, keyId }) => {
    await loadService(context, sid);
    // The whole id only: a prefix could name a key the operator did not mean.
    const key = (await context.accounts.listApiKeys(sid)).find((candidate) => candidate.keyId === keyId);
    if (!key) throw new AdminError(`No API key ${keyId} in service ${sid}`);
    if (key.revokedAt) {
      return {
        json: { serviceSid: sid, keyId: key.keyId, revokedAt: key.revokedAt, alreadyRevoked: true },
        text: `Key ${key.keyId} was already revoked at ${key.revokedAt}.`,
      };
    }
    const now = new Date();
    if (!(await context.accounts.revokeApiKey(sid, key.keyId, now))) {
      throw new AdminError(`No API key ${keyId} in service ${sid}`);
    }
    return {
      json: { serviceSid: sid, keyId: key.keyId, revokedAt: now.toISOString(), alreadyRevoked: false },
      text: `Revoked key ${key.keyId}. The next request with it is refused.`,
    };
  },
});

// --- balance and ledger ---------------------------------------------------------------------------------

const balanceShow = command({
  words: ['balance', 'show'],
  args: ['<VA>'],
  summary: "Show a service's balance",
  examples: [`balance show ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    return {
      json: { serviceSid: sid, balance: formatUnits(service.balance), currency: 'USD' },
      text: `Balance of ${service.name}: ${usd(service.balance)}`,
    };
  },
});

const balanceTopUp = command({
  words: ['balance', 'topup'],
  args: ['<VA>', '<usd>'],
  summary: 'Add USD (up to 4 decimals) to the balance',
  examples: [`balance topup ${VA} 10`, `balance topup ${VA} 0.5`],
  parse: ([sid, amount]) => ({
    sid: parse.serviceSid(sid!),
    units: parse.usd(amount!, 'Top-up amount', { allowZero: false }),
  }),
  run: async (context, { sid, units }) => {
    await loadService(context, sid);
    const balance = await context.accounts.topUp(sid, units);
    return {
      json: { serviceSid: sid, added: formatUnits(units), balance: formatUnits(balance), currency: 'USD' },
      text: `Added ${usd(units)}. Balance: ${usd(balance)}`,
    };
  },
});

const charges = command({
  words: ['charges'],
  args: ['<VA>'],
  summary: 'List the charges (one per accepted send), oldest first, and their total',
  examples: [`charges ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const lines = (await context.accounts.listCharges(sid)).sort((a, b) => a.at.localeCompare(b.at));
    const total = lines.reduce((sum, line) => sum + line.amount, 0);
    return {
      json: {
        serviceSid: sid,
        count: lines.length,
        total: formatUnits(total),
        currency: 'USD',
        charges: lines.map((line) => ({ ...line, amount: formatUnits(line.amount) })),
      },
      text:
        lines.length === 0
          ? 'No charges.'
          : [
              table(
                ['Time', 'Verification', 'USD'],
                lines.map((line) => [line.at, line.verificationSid, formatUnits(line.amount)]),
              ),
              `${lines.length} charge${lines.length === 1 ? '' : 's'}, total ${usd(total)}`,
            ].join('\n'),
    };
  },
});

// --- templates ------------------------------------------------------------------------------------------

const templateAdd = command({
  words: ['template', 'add'],
  args: ['<VA>', '<text>'],
  options: ['default', 'locale'],
  optionsUsage: '[--default] [--locale en]',
  summary: 'Add a template (text with {code}); --default makes it the default',
  examples: [`template add ${VA} "Your Acme code is {code}" --default`],
  parse: ([sid, body], values) => ({
    sid: parse.serviceSid(sid!),
    body: parse.templateBody(body!),
    locale: values.locale === undefined ? 'en' : parse.locale(values.locale),
    makeDefault: values.default === true,
  }),
  run: async (context, { sid, body, locale, makeDefault }) => {
    await loadService(context, sid);
    const template = await context.accounts.addTemplate(sid, body, locale);
    if (makeDefault) await context.accounts.setDefaultTemplate(sid, template.sid);
    return {
      json: { serviceSid: sid, ...template, default: makeDefault },
      text: `Added template ${template.sid}${makeDefault ? ' (now the default)' : ''}.`,
    };
  },
});

const templateList = command({
  words: ['template', 'list'],
  args: ['<VA>'],
  summary: "List the service's templates; * marks the default",
  examples: [`template list ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    const templates = await context.accounts.listTemplates(sid);
    const defaultSid = service.defaultTemplate?.sid;
    return {
      json: {
        serviceSid: sid,
        defaultTemplateSid: defaultSid ?? null,
        templates: templates.map((template) => ({ ...template, default: template.sid === defaultSid })),
      },
      text:
        templates.length === 0
          ? 'No templates.'
          : table(
              ['', 'Template SID', 'Locale', 'Text'],
              templates.map((t) => [t.sid === defaultSid ? '*' : '', t.sid, t.locale, t.body]),
            ),
    };
  },
});

const templateDefault = command({
  words: ['template', 'default'],
  args: ['<VA>', '<HX>'],
  summary: 'Make a template the default (used when a send has no TemplateSid)',
  examples: [`template default ${VA} ${HX}`],
  parse: ([sid, template]) => ({ sid: parse.serviceSid(sid!), templateSid: parse.templateSid(template!) }),
  run: async (context, { sid, templateSid }) => {
    await loadService(context, sid);
    const template = (await context.accounts.listTemplates(sid)).find((t) => t.sid === templateSid);
    if (!template) throw new AdminError(`No template ${templateSid} in service ${sid} (see template list)`);
    await context.accounts.setDefaultTemplate(sid, templateSid);
    return {
      json: { serviceSid: sid, defaultTemplateSid: templateSid },
      text: `Default template: ${templateText(template)}`,
    };
  },
});

const templateClearDefault = command({
  words: ['template', 'clear-default'],
  args: ['<VA>'],
  summary: 'Remove the default: sends without TemplateSid get no_default_template',
  examples: [`template clear-default ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    await context.accounts.clearDefaultTemplate(sid);
    return {
      json: { serviceSid: sid, defaultTemplateSid: null },
      text: 'No default template: sends must name a TemplateSid.',
    };
  },
});

// --- delivery rules -------------------------------------------------------------------------------------

type Rules = Service['rules'];

const rulesJson = (sid: string, rules: Rules, changed?: boolean) => ({
  serviceSid: sid,
  ...(changed !== undefined && { changed }),
  blockedCountries: rules.blockedCountries,
  blockedPrefixes: rules.blockedPrefixes,
});

const rulesText = (rules: Rules) =>
  rows([
    ['Blocked countries', list(rules.blockedCountries)],
    ['Blocked prefixes', list(rules.blockedPrefixes)],
  ]);

/**
 * One entry added to or removed from a rule list. Read-modify-write of the whole lists: fine for an
 * operator's command, though two operators editing the same service at once could lose an edit.
 */
function ruleEdit(options: {
  action: string;
  argument: string;
  summary: string;
  example: string;
  list: keyof Rules;
  add: boolean;
  parseEntry: (text: string) => string;
}): Command {
  return command({
    words: ['rules', options.action],
    args: ['<VA>', options.argument],
    summary: options.summary,
    examples: [options.example],
    parse: ([sid, entry]) => ({ sid: parse.serviceSid(sid!), entry: options.parseEntry(entry!) }),
    run: async (context, { sid, entry }) => {
      const { rules } = await loadService(context, sid);
      const current = rules[options.list];
      const present = current.includes(entry);
      const changed = options.add !== present;
      const next: Rules = {
        ...rules,
        [options.list]: options.add
          ? [...current.filter((e) => e !== entry), entry]
          : current.filter((e) => e !== entry),
      };
      if (changed) await context.accounts.setRules(sid, next);
      const verb = options.add ? 'blocked' : 'unblocked';
      const note = changed ? `${entry} ${verb}.` : `${entry} was already ${verb}; nothing changed.`;
      return { json: rulesJson(sid, next, changed), text: `${note}\n${rulesText(next)}` };
    },
  });
}

const rulesShow = command({
  words: ['rules', 'show'],
  args: ['<VA>'],
  summary: 'Show the delivery rules (blocked countries and prefixes)',
  examples: [`rules show ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const { rules } = await loadService(context, sid);
    return { json: rulesJson(sid, rules), text: rulesText(rules) };
  },
});

const rulesClear = command({
  words: ['rules', 'clear'],
  args: ['<VA>'],
  summary: 'Remove every delivery rule',
  examples: [`rules clear ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const rules: Rules = { blockedCountries: [], blockedPrefixes: [] };
    await context.accounts.setRules(sid, rules);
    return { json: rulesJson(sid, rules, true), text: `Delivery rules cleared.\n${rulesText(rules)}` };
  },
});

// --- prices ---------------------------------------------------------------------------------------------

const priceOrNull = (units: number | undefined) => (units === undefined ? null : formatUnits(units));

const priceList = command({
  words: ['price', 'list'],
  args: ['<VA>'],
  summary: 'Per served country: list price, own price, price charged',
  examples: [`price list ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    const service = await loadService(context, sid);
    const countries = [...new Set([...Object.keys(ROUTES), ...Object.keys(service.prices)])];
    const prices = countries.map((country) => {
      const listPrice = ROUTES[country]?.price;
      const ownPrice = service.prices[country];
      return {
        country,
        listPrice: priceOrNull(listPrice),
        servicePrice: priceOrNull(ownPrice),
        price: priceOrNull(ownPrice ?? listPrice),
      };
    });
    return {
      json: { serviceSid: sid, currency: 'USD', prices },
      text: table(
        ['Country', 'List USD', 'Own USD', 'Charged USD'],
        prices.map((p) => [p.country, p.listPrice ?? '-', p.servicePrice ?? '-', p.price ?? 'not priceable']),
      ),
    };
  },
});

const priceSet = command({
  words: ['price', 'set'],
  args: ['<VA>', '<CC>', '<usd>'],
  summary: "Set the service's own price for a served country",
  examples: [`price set ${VA} CU 0.0600`],
  parse: ([sid, country, amount]) => ({
    sid: parse.serviceSid(sid!),
    country: parse.servedCountry(country!),
    units: parse.usd(amount!, 'Price'),
  }),
  run: async (context, { sid, country, units }) => {
    await loadService(context, sid);
    await context.accounts.setPrice(sid, country, units);
    return {
      json: {
        serviceSid: sid,
        country,
        price: formatUnits(units),
        listPrice: priceOrNull(ROUTES[country]?.price),
        currency: 'USD',
      },
      text: `A send to ${country} now costs ${usd(units)}.`,
    };
  },
});

const priceRemove = command({
  words: ['price', 'remove'],
  args: ['<VA>', '<CC>'],
  summary: 'Remove an own price: the list price applies again',
  examples: [`price remove ${VA} CU`],
  parse: ([sid, country]) => ({ sid: parse.serviceSid(sid!), country: parse.country(country!) }),
  run: async (context, { sid, country }) => {
    const service = await loadService(context, sid);
    const removed = service.prices[country] !== undefined;
    if (removed) await context.accounts.removePrice(sid, country);
    const listPrice = ROUTES[country]?.price;
    return {
      json: { serviceSid: sid, country, removed, price: priceOrNull(listPrice), currency: 'USD' },
      text: [
        removed ? `Removed the own price for ${country}.` : `The service had no own price for ${country}.`,
        listPrice === undefined
          ? `Sends to ${country} are refused (${ROUTES[country] ? 'not_priceable' : 'unroutable'}).`
          : `A send to ${country} costs the list price, ${usd(listPrice)}.`,
      ].join(' '),
    };
  },
});

// --- channels -------------------------------------------------------------------------------------------

const channelsSet = command({
  words: ['channels', 'set'],
  args: ['<VA>', '<list>'],
  summary: `Set the enabled channels, comma-separated: ${CHANNELS.join(',')}`,
  examples: [`channels set ${VA} sms,whatsapp`],
  parse: ([sid, names]) => ({ sid: parse.serviceSid(sid!), channels: parse.channels(names!) }),
  run: async (context, { sid, channels }) => {
    await loadService(context, sid);
    await context.accounts.setChannels(sid, channels);
    return { json: { serviceSid: sid, channels }, text: `Channels: ${list(channels)}` };
  },
});

// --- webhooks -----------------------------------------------------------------------------------------------

const WH = 'WH0123456789abcdef0123456789abcdef';

/** The admin command allows http:// and loopback URLs only for a local table (the local stack's receiver). */
const targetsLocalTable = (values: OptionValues): boolean =>
  values.table === undefined || values.endpoint !== undefined;

const SECRET_NOTE = [
  'The secret is shown once; only an encrypted copy is stored. Sealing it needs the webhook key: the running',
  'local stack provides it; a deployed table needs --secret-arn ARN (the stack output WebhookKeySecretArn, read',
  'with your AWS credentials) or OTP_WEBHOOK_SECRET_ARN; OTP_MASTER_KEY gives it directly (another DynamoDB Local).',
];

const secretText = (secret: string) => `${secret}   (shown once: store it now)`;

const endpointJson = (endpoint: WebhookEndpoint) => ({
  endpointSid: endpoint.sid,
  url: endpoint.url,
  enabled: endpoint.enabled,
  createdAt: endpoint.createdAt,
  previousSecretUntil: endpoint.previousSecretUntil ?? null,
});

async function loadEndpoint(
  context: CommandContext,
  sid: string,
  endpointSid: string,
): Promise<WebhookEndpoint> {
  await loadService(context, sid);
  const endpoint = await context.webhooks.getEndpoint(sid, endpointSid);
  if (!endpoint)
    throw new AdminError(`No webhook endpoint ${endpointSid} in service ${sid} (see webhook list)`);
  return endpoint;
}

const webhookAdd = command({
  words: ['webhook', 'add'],
  args: ['<VA>', '<url>'],
  options: ['secret-arn'],
  optionsUsage: '[--secret-arn ARN]',
  summary: `Register a webhook endpoint (at most ${MAX_WEBHOOK_ENDPOINTS_PER_SERVICE}); prints its signing secret once`,
  details: [
    'Every event of the service is posted to the URL, signed per Standard Webhooks (see docs/webhooks.md).',
    'A deployed table takes only public https:// URLs; the local stack also takes its own receiver,',
    '<base URL>/_local/webhooks/receiver.',
    ...SECRET_NOTE,
  ],
  examples: [
    `webhook add ${VA} https://hooks.example.com/otp --secret-arn arn:aws:secretsmanager:eu-west-1:123456789012:secret:WebhookKey-abc`,
    `webhook add ${VA} http://127.0.0.1:3000/_local/webhooks/receiver`,
  ],
  parse: ([sid, url], values) => ({
    sid: parse.serviceSid(sid!),
    url: parse.webhookUrl(url!, { allowPrivate: targetsLocalTable(values) }),
  }),
  run: async (context, { sid, url }) => {
    await loadService(context, sid);
    const vault = await context.webhookVault();
    const added = await context.webhooks.addEndpoint(sid, url, vault, cryptoRandom);
    if (!added.ok) {
      throw new AdminError(
        added.reason === 'too_many'
          ? `Service ${sid} already has ${MAX_WEBHOOK_ENDPOINTS_PER_SERVICE} webhook endpoints; remove one first`
          : `No service ${sid} in ${context.targetDescription}`,
      );
    }
    return {
      json: { serviceSid: sid, ...endpointJson(added.endpoint), secret: added.secret },
      text: [
        `Added webhook endpoint ${added.endpoint.sid}.`,
        rows([
          ['URL', added.endpoint.url],
          ['Signing secret', secretText(added.secret)],
        ]),
      ].join('\n'),
    };
  },
});

const webhookList = command({
  words: ['webhook', 'list'],
  args: ['<VA>'],
  summary: "List a service's webhook endpoints",
  examples: [`webhook list ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const endpoints = (await context.webhooks.listEndpoints(sid)).sort((a, b) =>
      a.createdAt.localeCompare(b.createdAt),
    );
    return {
      json: { serviceSid: sid, endpoints: endpoints.map(endpointJson) },
      text:
        endpoints.length === 0
          ? 'No webhook endpoints.'
          : table(
              ['Endpoint SID', 'Status', 'Created', 'URL'],
              endpoints.map((e) => [e.sid, e.enabled ? 'enabled' : 'disabled', e.createdAt, e.url]),
            ),
    };
  },
});

function webhookSwitch(enable: boolean): Command {
  const action = enable ? 'enable' : 'disable';
  return command({
    words: ['webhook', action],
    args: ['<VA>', '<WH>'],
    summary: enable
      ? 'Enable a webhook endpoint again (events from now on)'
      : 'Stop posting to a webhook endpoint; queued retries are dropped',
    examples: [`webhook ${action} ${VA} ${WH}`],
    parse: ([sid, endpoint]) => ({ sid: parse.serviceSid(sid!), endpointSid: parse.webhookSid(endpoint!) }),
    run: async (context, { sid, endpointSid }) => {
      const endpoint = await loadEndpoint(context, sid, endpointSid);
      const changed = endpoint.enabled !== enable;
      if (changed) await context.webhooks.setEnabled(sid, endpointSid, enable);
      return {
        json: { serviceSid: sid, endpointSid, enabled: enable, changed },
        text: changed
          ? `Webhook endpoint ${endpointSid} ${action}d.`
          : `Webhook endpoint ${endpointSid} was already ${action}d; nothing changed.`,
      };
    },
  });
}

const webhookRotate = command({
  words: ['webhook', 'rotate'],
  args: ['<VA>', '<WH>'],
  options: ['secret-arn', 'now'],
  optionsUsage: '[--now] [--secret-arn ARN]',
  summary: 'New signing secret, shown once; the old one also signs for 24 hours, or not at all with --now',
  details: [
    'During the 24 hours both signatures are sent (webhook-signature: "v1,<new> v1,<old>"), so the receiver can',
    'switch to the new secret without missing an event.',
    '--now cuts every previous secret off at once (a leaked secret): from the next delivery on, retries already',
    'queued included, only the new secret signs, and the receiver refuses events until it has the new secret.',
    ...SECRET_NOTE,
  ],
  examples: [`webhook rotate ${VA} ${WH}`, `webhook rotate ${VA} ${WH} --now`],
  parse: ([sid, endpoint], values) => ({
    sid: parse.serviceSid(sid!),
    endpointSid: parse.webhookSid(endpoint!),
    immediate: values.now === true,
  }),
  run: async (context, { sid, endpointSid, immediate }) => {
    await loadEndpoint(context, sid, endpointSid);
    const vault = await context.webhookVault();
    const now = new Date();
    const secret = await context.webhooks.rotateSecret(sid, endpointSid, vault, now, { immediate });
    if (!secret) throw new AdminError(`No webhook endpoint ${endpointSid} in service ${sid}`);
    const rotated = await context.webhooks.getEndpoint(sid, endpointSid);
    return {
      json: { serviceSid: sid, ...endpointJson(rotated!), secret },
      text: [
        `New signing secret for ${endpointSid}.`,
        rows([
          ['Signing secret', secretText(secret)],
          [
            'Old secret',
            rotated?.previousSecretUntil
              ? `also signs until ${rotated.previousSecretUntil}`
              : 'no longer signs (cut off now)',
          ],
        ]),
      ].join('\n'),
    };
  },
});

const webhookRemove = command({
  words: ['webhook', 'remove'],
  args: ['<VA>', '<WH>'],
  summary: 'Remove a webhook endpoint and its secret; queued retries are dropped',
  examples: [`webhook remove ${VA} ${WH}`],
  parse: ([sid, endpoint]) => ({ sid: parse.serviceSid(sid!), endpointSid: parse.webhookSid(endpoint!) }),
  run: async (context, { sid, endpointSid }) => {
    await loadEndpoint(context, sid, endpointSid);
    if (!(await context.webhooks.removeEndpoint(sid, endpointSid))) {
      throw new AdminError(`No webhook endpoint ${endpointSid} in service ${sid}`);
    }
    return {
      json: { serviceSid: sid, endpointSid, removed: true },
      text: `Removed webhook endpoint ${endpointSid}.`,
    };
  },
});

export const COMMANDS: readonly Command[] = [
  serviceCreate,
  serviceShow,
  keyIssue,
  keyList,
  keyRevoke,
  balanceShow,
  balanceTopUp,
  charges,
  templateAdd,
  templateList,
  templateDefault,
  templateClearDefault,
  rulesShow,
  ruleEdit({
    action: 'block-country',
    argument: '<CC>',
    summary: 'Refuse sends to a country (403 blocked_by_policy)',
    example: `rules block-country ${VA} GB`,
    list: 'blockedCountries',
    add: true,
    parseEntry: parse.country,
  }),
  ruleEdit({
    action: 'unblock-country',
    argument: '<CC>',
    summary: 'Remove a blocked country',
    example: `rules unblock-country ${VA} GB`,
    list: 'blockedCountries',
    add: false,
    parseEntry: parse.country,
  }),
  ruleEdit({
    action: 'block-prefix',
    argument: '<+prefix>',
    summary: 'Refuse sends to numbers starting with +digits (403 blocked_by_policy)',
    example: `rules block-prefix ${VA} +4470`,
    list: 'blockedPrefixes',
    add: true,
    parseEntry: parse.prefix,
  }),
  ruleEdit({
    action: 'unblock-prefix',
    argument: '<+prefix>',
    summary: 'Remove a blocked prefix',
    example: `rules unblock-prefix ${VA} +4470`,
    list: 'blockedPrefixes',
    add: false,
    parseEntry: parse.prefix,
  }),
  rulesClear,
  priceList,
  priceSet,
  priceRemove,
  channelsSet,
  webhookAdd,
  webhookList,
  webhookSwitch(false),
  webhookSwitch(true),
  webhookRotate,
  webhookRemove,
];
