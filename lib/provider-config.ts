/**
 * The delivery providers of a deployment, from CDK context (docs/providers.md): which provider carries each
 * channel (`otp:providers`, the functions' `OTP_PROVIDERS`) and each provider's settings, validated at synth time
 * so that a missing origination identity or a malformed ARN fails `cdk synth`, not the first send.
 *
 * Every key may also come from a JSON file named by `otp:providersFile` (an object of these same `otp:*` keys,
 * e.g. providers.example.json); a key given as context (`cdk.json`, `-c`) wins over the file.
 *
 * Nothing set: no provider configuration, every channel on http-carrier as before.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Node } from 'constructs';
import {
  PROVIDERS_ENV,
  parseProviderConfig,
  providersInUse,
  type ProviderConfig,
  type ProviderName,
} from '../functions/adapters/providers/config';
import { CHANNELS, type Channel } from '../functions/core/routing';
import { DEFAULT_META_API_VERSION } from '../functions/adapters/providers/whatsapp-template';
import { readRegisteredTemplates } from '../functions/adapters/providers/registered-templates';

export const PROVIDER_CONTEXT_KEYS = {
  providersFile: 'otp:providersFile',
  providers: 'otp:providers',
  awsSmsOriginationIdentity: 'otp:awsSmsOriginationIdentity',
  awsSmsRcsOriginationIdentity: 'otp:awsSmsRcsOriginationIdentity',
  awsSmsConfigurationSet: 'otp:awsSmsConfigurationSet',
  awsSmsCreateConfigurationSet: 'otp:awsSmsCreateConfigurationSet',
  awsSmsProtectConfigurationId: 'otp:awsSmsProtectConfigurationId',
  awsSmsMaxPrice: 'otp:awsSmsMaxPrice',
  awsSmsRegisteredTemplates: 'otp:awsSmsRegisteredTemplates',
  awsWhatsAppPhoneNumberId: 'otp:awsWhatsAppPhoneNumberId',
  awsWhatsAppTemplateName: 'otp:awsWhatsAppTemplateName',
  awsWhatsAppTemplateLanguage: 'otp:awsWhatsAppTemplateLanguage',
  awsWhatsAppMetaApiVersion: 'otp:awsWhatsAppMetaApiVersion',
  vonageBaseUrl: 'otp:vonageBaseUrl',
  vonageFrom: 'otp:vonageFrom',
  vonageWhatsAppTemplateName: 'otp:vonageWhatsAppTemplateName',
  vonageWhatsAppTemplateLanguage: 'otp:vonageWhatsAppTemplateLanguage',
} as const;
const K = PROVIDER_CONTEXT_KEYS;

/** Keys that once meant something, and why they are refused now rather than silently ignored. */
export const REMOVED_CONTEXT_KEYS: Readonly<Record<string, string>> = {
  'otp:awsSmsSuccessfulMeans':
    'was removed: an SMS attempt settles on final events only (isFinal), and a final TEXT_SUCCESSFUL ' +
    'settles it as delivered (docs/providers.md); delete the key',
};

interface AwsSmsSettings {
  /** ARN of the pool, phone number or sender id that sends `sms`; undefined when aws-sms carries no sms. */
  originationIdentityArn: string | undefined;
  /** ARN of the RCS agent, or of a pool holding it alone, that sends `rcs` (no SMS fallback on AWS's side). */
  rcsOriginationIdentityArn: string | undefined;
  /** An existing configuration set (name or ARN), or `create`: the stack creates one with the SNS destination. */
  configurationSet: { existing: string } | 'create';
  protectConfigurationId: string | undefined;
  maxPrice: string | undefined;
  /** Per country, the SMS template registered with its regulator (India's DLT), as `OTP_AWS_SMS_REGISTERED_TEMPLATES`. */
  registeredTemplates: string | undefined;
}

interface AwsWhatsAppSettings {
  /** `phone-number-id-...` or its ARN. */
  phoneNumberId: string;
  templateName: string;
  templateLanguage: string | undefined;
  /** The Meta API version AWS is asked to use: the context's, or the adapter's default; checked at synth. */
  metaApiVersion: string;
}

interface VonageSettings {
  baseUrl: string | undefined;
  /** Sender per channel (JSON in `OTP_VONAGE_FROM`). */
  from: Partial<Record<Channel, string>>;
  whatsAppTemplateName: string | undefined;
  whatsAppTemplateLanguage: string | undefined;
}

export interface ProviderDeployment {
  /** `OTP_PROVIDERS`, as every function reads it. */
  json: string;
  config: ProviderConfig;
  inUse: ProviderName[];
  awsSms?: AwsSmsSettings;
  awsWhatsApp?: AwsWhatsAppSettings;
  vonage?: VonageSettings;
}

/**
 * The resource ARNs the send permissions are scoped to, in the Service Authorization Reference's formats
 * (sms-voice: `phone-number/${PhoneNumberId}`, `pool/${PoolId}`, `sender-id/${SenderId}/${IsoCountryCode}`,
 * `rcs-agent/${RcsAgentId}` (listed for SendRcsMessage, not SendTextMessage: granted anyway, lib/constructs/
 * providers.ts says why), `configuration-set/${ConfigurationSetName}`,
 * `protect-configuration/${ProtectConfigurationId}`; social-messaging: `phone-number-id/${OriginationPhoneNumberId}`;
 * docs/providers.md cites the source). A sender id's ARN ends with its country: without it, the grant would name
 * no resource IAM ever checks.
 */
const ARN = {
  smsIdentity:
    /^arn:aws[\w-]*:sms-voice:[a-z0-9-]+:\d{12}:(phone-number\/[\w-]+|pool\/[\w-]+|sender-id\/[\w-]+\/[A-Z]{2})$/,
  /** The RCS agent, or a pool holding that agent alone (a pool is a resource type of SendTextMessage). */
  rcsAgent: /^arn:aws[\w-]*:sms-voice:[a-z0-9-]+:\d{12}:(rcs-agent|pool)\/[\w-]+$/,
  configurationSet: /^arn:aws[\w-]*:sms-voice:[a-z0-9-]+:\d{12}:configuration-set\/[\w-]{1,64}$/,
  /**
   * The model's own pattern (`WhatsAppPhoneNumberId`: `arn:.*:phone-number-id/[0-9a-zA-Z]+`): the resource part is
   * the id without its `phone-number-id-` prefix.
   */
  whatsAppPhoneNumber: /^arn:aws[\w-]*:social-messaging:[a-z0-9-]+:\d{12}:phone-number-id\/[0-9a-zA-Z]+$/,
};

/** The prefix of a WhatsApp phone number id (`phone-number-id-0123…`), which its ARN does not carry. */
const WHATSAPP_PHONE_NUMBER_ID_PREFIX = 'phone-number-id-';

/**
 * Meta Graph API versions and the day Meta stops serving each (Meta, "Graph API changelog: versions", read
 * 2026-11-26). Synth refuses a version Meta has retired: AWS passes `metaApiVersion` on to Meta, so every
 * WhatsApp send would fail. A version newer than this table is accepted (Meta has not announced its end).
 */
const META_API_VERSION_ENDS: Readonly<Record<string, string | undefined>> = {
  'v19.0': '2026-05-21',
  'v20.0': '2026-09-24',
  'v21.0': '2027-01-21',
  'v22.0': '2027-05-20',
  'v23.0': '2027-10-08',
  'v24.0': '2028-02-18',
  'v25.0': '2028-07-29',
  'v26.0': undefined,
};

/** Why `version` cannot be used on `now`, or undefined when it can. */
export function metaApiVersionProblem(version: string, now: Date): string | undefined {
  const match = /^v(\d{1,3})\.0$/.exec(version);
  if (!match) return 'must be like v24.0 (Meta versions are v<major>.0)';
  const known = Object.keys(META_API_VERSION_ENDS);
  const oldest = Math.min(...known.map((v) => Number(v.slice(1, -2))));
  if (Number(match[1]) < oldest) return `is older than ${known[0]}, which Meta has retired`;
  const end = META_API_VERSION_ENDS[version];
  if (end !== undefined && Date.parse(`${end}T00:00:00Z`) <= now.getTime())
    return `was retired by Meta on ${end}`;
  return undefined;
}

/** Reads `otp:*` keys from context, then from `otp:providersFile`. */
class ContextReader {
  private readonly file: Record<string, unknown>;

  constructor(private readonly node: Node) {
    const fileName: unknown = node.tryGetContext(K.providersFile);
    if (fileName === undefined || fileName === null || fileName === '') {
      this.file = {};
      return;
    }
    if (typeof fileName !== 'string') throw new Error(`Context ${K.providersFile} must be a file name`);
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(path.resolve(fileName), 'utf8'));
    } catch (error) {
      throw new Error(`Context ${K.providersFile}: cannot read "${fileName}" as JSON (${String(error)})`);
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json))
      throw new Error(`Context ${K.providersFile}: "${fileName}" must hold a JSON object of otp:* keys`);
    const known = new Set<string>(Object.values(K));
    for (const key of Object.keys(json)) {
      const removed = REMOVED_CONTEXT_KEYS[key];
      if (removed) throw new Error(`Context ${K.providersFile}: "${fileName}" has ${key}, which ${removed}`);
      if (!known.has(key) && !key.startsWith('//'))
        throw new Error(
          `Context ${K.providersFile}: "${fileName}" has an unknown key ${key} (known: ${[...known].join(', ')})`,
        );
    }
    this.file = json as Record<string, unknown>;
  }

  value(key: string): unknown {
    const value: unknown = this.node.tryGetContext(key);
    if (value !== undefined && value !== null && value !== '') return value;
    const fromFile = this.file[key];
    return fromFile === null || fromFile === '' ? undefined : fromFile;
  }

  text(key: string, pattern?: RegExp, what?: string): string | undefined {
    const value = this.value(key);
    if (value === undefined) return undefined;
    if (typeof value !== 'string' && typeof value !== 'number')
      throw new Error(`Context ${key} must be a string, got ${JSON.stringify(value)}`);
    const text = String(value).trim();
    if (pattern && !pattern.test(text))
      throw new Error(`Context ${key} must be ${what ?? `like ${String(pattern)}`}, got "${text}"`);
    return text;
  }

  /** An object, given as JSON or (from the CLI) as a JSON string. */
  object(key: string): Record<string, unknown> | undefined {
    let value = this.value(key);
    if (value === undefined) return undefined;
    if (typeof value === 'string') {
      try {
        value = JSON.parse(value);
      } catch {
        throw new Error(`Context ${key} is not JSON: ${value as string}`);
      }
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new Error(`Context ${key} must be a JSON object`);
    return value as Record<string, unknown>;
  }

  flag(key: string): boolean {
    const value = this.value(key);
    if (value === undefined || value === false || value === 'false') return false;
    if (value === true || value === 'true') return true;
    throw new Error(`Context ${key} must be true or false, got ${JSON.stringify(value)}`);
  }
}

/** The provider of `channel` anywhere in the configuration (default or a country override). */
const carries = (config: ProviderConfig, provider: ProviderName, channel: Channel): boolean =>
  config.channels[channel] === provider ||
  Object.values(config.countries).some((map) => map[channel] === provider);

/** The deployment's providers; undefined when `otp:providers` is not set (every channel on http-carrier). */
export function readProviderDeployment(node: Node, now: Date = new Date()): ProviderDeployment | undefined {
  const ctx = new ContextReader(node);
  for (const [key, removed] of Object.entries(REMOVED_CONTEXT_KEYS)) {
    const value: unknown = node.tryGetContext(key);
    if (value !== undefined && value !== null) throw new Error(`Context ${key} ${removed}`);
  }
  const providers = ctx.object(K.providers);
  if (providers === undefined) {
    const stray = Object.values(K).filter(
      (key) => key !== K.providers && key !== K.providersFile && ctx.value(key) !== undefined,
    );
    if (stray.length > 0)
      throw new Error(`Context ${stray.join(', ')} set without ${K.providers}: which channel do they carry?`);
    return undefined;
  }
  const json = JSON.stringify(providers);
  let config: ProviderConfig;
  try {
    config = parseProviderConfig(json);
  } catch (error) {
    throw new Error(`Context ${K.providers}: ${(error as Error).message.replace(`${PROVIDERS_ENV} `, '')}`);
  }
  const inUse = providersInUse(config);
  const deployment: ProviderDeployment = { json, config, inUse };
  const unused = (provider: ProviderName, keys: string[]) => {
    const set = keys.filter((key) => ctx.value(key) !== undefined);
    if (set.length > 0)
      throw new Error(`Context ${set.join(', ')} set, but ${K.providers} gives ${provider} no channel`);
  };

  const smsKeys = [
    K.awsSmsOriginationIdentity,
    K.awsSmsRcsOriginationIdentity,
    K.awsSmsConfigurationSet,
    K.awsSmsCreateConfigurationSet,
    K.awsSmsProtectConfigurationId,
    K.awsSmsMaxPrice,
    K.awsSmsRegisteredTemplates,
  ];
  if (inUse.includes('aws-sms')) {
    const originationIdentityArn = ctx.text(
      K.awsSmsOriginationIdentity,
      ARN.smsIdentity,
      'the ARN of a pool, phone number or sender id (arn:aws:sms-voice:REGION:ACCOUNT:pool/ID, phone-number/ID, sender-id/NAME/COUNTRY)',
    );
    const rcsOriginationIdentityArn = ctx.text(
      K.awsSmsRcsOriginationIdentity,
      ARN.rcsAgent,
      'the ARN of an RCS agent (arn:aws:sms-voice:REGION:ACCOUNT:rcs-agent/ID) or of a pool holding that agent alone: RCS is sent from the agent alone',
    );
    if (carries(config, 'aws-sms', 'sms') && !originationIdentityArn)
      throw new Error(`${K.providers} puts sms on aws-sms: set ${K.awsSmsOriginationIdentity}`);
    if (carries(config, 'aws-sms', 'rcs') && !rcsOriginationIdentityArn)
      throw new Error(`${K.providers} puts rcs on aws-sms: set ${K.awsSmsRcsOriginationIdentity}`);
    const existing = ctx.text(
      K.awsSmsConfigurationSet,
      /^([\w-]{1,64}|arn:aws[\w-]*:sms-voice:[a-z0-9-]+:\d{12}:configuration-set\/[\w-]{1,64})$/,
      'a configuration set name or ARN',
    );
    const create = ctx.flag(K.awsSmsCreateConfigurationSet);
    if (existing && create)
      throw new Error(
        `Set one of ${K.awsSmsConfigurationSet} and ${K.awsSmsCreateConfigurationSet}, not both`,
      );
    if (!existing && !create)
      throw new Error(
        `aws-sms needs a configuration set whose events reach the stack's ProviderEventsTopic (without one no ` +
          `receipt ever arrives and every SMS waits out its channel): set ${K.awsSmsCreateConfigurationSet} ` +
          `to true, or ${K.awsSmsConfigurationSet} to an existing set pointed at the topic`,
      );
    deployment.awsSms = {
      originationIdentityArn,
      rcsOriginationIdentityArn,
      configurationSet: create ? 'create' : { existing: existing! },
      protectConfigurationId: ctx.text(
        K.awsSmsProtectConfigurationId,
        /^[\w-]{1,256}$/,
        'a protect configuration id',
      ),
      // The model's MaxPrice: 2 to 8 characters matching [0-9]{0,2}\.[0-9]{1,5}; AWS refuses any other value with
      // a ValidationException on every send.
      maxPrice: ctx.text(
        K.awsSmsMaxPrice,
        /^(?=.{2,8}$)[0-9]{0,2}\.[0-9]{1,5}$/,
        'a price in USD per message part as AWS takes it: up to 2 digits, a point, 1 to 5 decimals (e.g. 0.05)',
      ),
      registeredTemplates: registeredTemplates(ctx.object(K.awsSmsRegisteredTemplates)),
    };
  } else unused('aws-sms', smsKeys);

  const whatsAppKeys = [
    K.awsWhatsAppPhoneNumberId,
    K.awsWhatsAppTemplateName,
    K.awsWhatsAppTemplateLanguage,
    K.awsWhatsAppMetaApiVersion,
  ];
  if (inUse.includes('aws-whatsapp')) {
    const phoneNumberId = ctx.text(
      K.awsWhatsAppPhoneNumberId,
      /^(phone-number-id-[0-9a-zA-Z]{1,99}|arn:aws[\w-]*:social-messaging:[a-z0-9-]+:\d{12}:phone-number-id\/[0-9a-zA-Z]{1,99})$/,
      'a WhatsApp phone number id (phone-number-id-0123…) or its ARN (…:phone-number-id/0123…, without the id’s phone-number-id- prefix)',
    );
    const templateName = ctx.text(K.awsWhatsAppTemplateName, /^[a-z0-9_]{1,512}$/, 'a template name');
    if (!phoneNumberId || !templateName)
      throw new Error(
        `${K.providers} puts a channel on aws-whatsapp: set ${K.awsWhatsAppPhoneNumberId} and ${K.awsWhatsAppTemplateName}`,
      );
    deployment.awsWhatsApp = {
      phoneNumberId,
      templateName,
      templateLanguage: ctx.text(K.awsWhatsAppTemplateLanguage, /^[a-z]{2,3}(_[A-Z]{2})?$/, 'like en_US'),
      metaApiVersion: metaApiVersion(ctx.text(K.awsWhatsAppMetaApiVersion) ?? DEFAULT_META_API_VERSION, now),
    };
  } else unused('aws-whatsapp', whatsAppKeys);

  const vonageKeys = [
    K.vonageBaseUrl,
    K.vonageFrom,
    K.vonageWhatsAppTemplateName,
    K.vonageWhatsAppTemplateLanguage,
  ];
  if (inUse.includes('vonage')) {
    const from = ctx.object(K.vonageFrom) ?? {};
    for (const [channel, sender] of Object.entries(from)) {
      if (!(CHANNELS as readonly string[]).includes(channel) || channel === 'sna')
        throw new Error(`Context ${K.vonageFrom}: "${channel}" is not a channel Vonage carries`);
      if (typeof sender !== 'string' || !/^[\w +.-]{1,50}$/.test(sender))
        throw new Error(`Context ${K.vonageFrom}.${channel} must be a sender name or number`);
      // Viber's sender is the Viber Business Message ID Vonage assigns, a number (Vonage's Messages API guide;
      // its sandbox's is 16273), not a brand name: Vonage refuses any other `from` for viber_service.
      if (channel === 'viber' && !/^\d{1,20}$/.test(sender))
        throw new Error(
          `Context ${K.vonageFrom}.viber must be your Viber Business Message ID (digits, from Vonage), got "${sender}"`,
        );
    }
    for (const channel of ['sms', 'viber', 'whatsapp', 'rcs'] as const) {
      if (carries(config, 'vonage', channel) && !from[channel])
        throw new Error(
          `${K.providers} puts ${channel} on vonage: set ${K.vonageFrom}.${channel} (the sender)`,
        );
    }
    const baseUrl = ctx.text(K.vonageBaseUrl, /^https:\/\/[\w.-]+(:\d+)?(\/[\w./-]*)?$/, 'an https:// URL');
    const whatsAppTemplateName = ctx.text(
      K.vonageWhatsAppTemplateName,
      /^[a-z0-9_]{1,512}$/,
      'a template name',
    );
    if (carries(config, 'vonage', 'whatsapp') && !whatsAppTemplateName)
      throw new Error(`${K.providers} puts whatsapp on vonage: set ${K.vonageWhatsAppTemplateName}`);
    deployment.vonage = {
      baseUrl: baseUrl?.replace(/\/+$/, ''),
      from: from as Partial<Record<Channel, string>>,
      whatsAppTemplateName,
      whatsAppTemplateLanguage: ctx.text(
        K.vonageWhatsAppTemplateLanguage,
        /^[a-z]{2,3}(_[A-Z]{2})?$/,
        'like en_US',
      ),
    };
  } else unused('vonage', vonageKeys);

  return deployment;
}

/** The ARN of a configuration set given by name or ARN (`arn(resource)` formats one in the stack's account). */
export function configurationSetArn(nameOrArn: string, arn: (resource: string) => string): string {
  return ARN.configurationSet.test(nameOrArn) ? nameOrArn : arn(`configuration-set/${nameOrArn}`);
}

/**
 * The ARN of a WhatsApp phone number given by id or ARN. The id `phone-number-id-0123…` is the ARN's
 * `phone-number-id/0123…`: the resource type already says what the prefix said (the socialmessaging model's
 * pattern, and its own example `…:phone-number-id/45c1973a7577`).
 */
export function whatsAppPhoneNumberArn(idOrArn: string, arn: (resource: string) => string): string {
  if (ARN.whatsAppPhoneNumber.test(idOrArn)) return idOrArn;
  const id = idOrArn.startsWith(WHATSAPP_PHONE_NUMBER_ID_PREFIX)
    ? idOrArn.slice(WHATSAPP_PHONE_NUMBER_ID_PREFIX.length)
    : idOrArn;
  return arn(`phone-number-id/${id}`);
}

/**
 * `otp:awsSmsRegisteredTemplates`, checked as the deliver function will read it: the JSON it gets, or undefined.
 */
function registeredTemplates(value: Record<string, unknown> | undefined): string | undefined {
  if (value === undefined) return undefined;
  readRegisteredTemplates(value, `Context ${K.awsSmsRegisteredTemplates}`);
  return JSON.stringify(value);
}

/** `otp:awsWhatsAppMetaApiVersion`, checked against Meta's retirement dates as of `now` (synth time). */
function metaApiVersion(version: string, now: Date): string {
  const problem = metaApiVersionProblem(version, now);
  if (problem) throw new Error(`Context ${K.awsWhatsAppMetaApiVersion} "${version}" ${problem}`);
  return version;
}
