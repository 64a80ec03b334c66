/**
 * The post-deploy check in the deliver function (`npm run admin -- providers check`): the check event, read by
 * hand (the deliver bundle carries no zod and no phone metadata), and the checkers of the providers this
 * function's settings name. The event carries destination numbers only, never a code or a text: nothing it asks
 * for can send a message.
 */
import {
  PROVIDER_CHECK_KIND,
  runProviderCheck,
  type ProviderCheckReport,
  type ProviderCheckRequest,
  type ProviderChecker,
} from '../core/provider-check';
import type { Provider } from '../core/providers';
import {
  configuredChannels,
  parseProviderConfig,
  providerFor,
  providersInUse,
} from '../adapters/providers/config';
import { AwsSmsProvider } from '../adapters/providers/aws-sms';
import { AwsWhatsAppProvider } from '../adapters/providers/aws-whatsapp';
import {
  awsSmsChecker,
  awsWhatsAppChecker,
  vonageChecker,
  type CheckClock,
} from '../adapters/providers/check';
import type { VonageCredentials } from '../adapters/providers/vonage';
import { isObject } from '../adapters/shape';
import { allowedChannelsFromEnv, type Env } from './env';
import { vonageFromEnv } from './providers';

/** E.164 as SendTextMessage's model takes it (`^\+?[1-9][0-9]{1,18}$`), with the plus. */
const E164 = /^\+[1-9]\d{1,18}$/;

/** Whether an invocation is a check event (it names the kind); its other fields are checked by `readCheckEvent`. */
export const isProviderCheckEvent = (event: unknown): boolean =>
  isObject(event) && event.kind === PROVIDER_CHECK_KIND;

/** The check event's request; throws naming what is wrong (the invoker sees it as the function's error). */
export function readCheckEvent(event: unknown): ProviderCheckRequest {
  if (!isObject(event) || event.kind !== PROVIDER_CHECK_KIND) throw new Error('Not a providers check event');
  const unknown = Object.keys(event).filter((key) => !['kind', 'to', 'countries'].includes(key));
  if (unknown.length > 0) throw new Error(`The check event has unknown fields: ${unknown.join(', ')}`);
  // Per country, the number its dry runs go to (the admin command fills in a default for every country).
  const to: Record<string, string> = {};
  if (event.to !== undefined) {
    if (!isObject(event.to)) throw new Error('The check event’s to must map countries to E.164 numbers');
    for (const [country, number] of Object.entries(event.to)) {
      if (!/^[A-Z]{2}$/.test(country)) throw new Error(`Not an ISO country code: ${country}`);
      if (typeof number !== 'string' || !E164.test(number))
        throw new Error(`Not an E.164 number: ${String(number)}`);
      to[country] = number;
    }
  }
  let countries: string[] | undefined;
  if (event.countries !== undefined) {
    const list = event.countries;
    if (
      !Array.isArray(list) ||
      !list.every((country) => typeof country === 'string' && /^[A-Z]{2}$/.test(country))
    )
      throw new Error('The check event’s countries must be ISO country codes');
    countries = list as string[];
  }
  return { to, ...(countries && { countries }) };
}

export interface ProviderCheckWiring {
  aws: Partial<Record<'aws-sms' | 'aws-whatsapp', Provider>>;
  vonageCredentials: () => Promise<VonageCredentials>;
  /** What paces the dry runs (DryRun's rate); the system's clock but where a test lends its own. */
  checkClock?: CheckClock;
}

/**
 * Less than this left of the invocation and no further check is started: one may take the AWS clients'
 * whole request time-out (aws-errors.ts), with room to answer.
 */
const CHECK_RESERVE_MS = 7_000;

/** Runs the check of this function's providers for `event`; `timeLeftMs`: the Lambda context's remaining time. */
export function runProviderCheckFromEnv(
  env: Env,
  wiring: ProviderCheckWiring,
  event: unknown,
  timeLeftMs: () => number,
): Promise<ProviderCheckReport> {
  const request = readCheckEvent(event);
  const config = parseProviderConfig(env.OTP_PROVIDERS);
  const allowed = allowedChannelsFromEnv(env);
  const checkers: Record<string, ProviderChecker> = {};
  const sms = wiring.aws['aws-sms'];
  if (sms instanceof AwsSmsProvider) checkers['aws-sms'] = awsSmsChecker(sms, wiring.checkClock);
  const whatsApp = wiring.aws['aws-whatsapp'];
  if (whatsApp instanceof AwsWhatsAppProvider) checkers['aws-whatsapp'] = awsWhatsAppChecker(whatsApp);
  if (providersInUse(config).includes('vonage'))
    checkers.vonage = vonageChecker(wiring.vonageCredentials, vonageFromEnv(env.OTP_VONAGE_FROM));
  return runProviderCheck({
    request,
    channels: configuredChannels(config).filter((channel) => allowed.includes(channel)),
    providerFor: (channel, country) => providerFor(config, channel, country),
    checkers,
    timeLeftMs,
    reserveMs: CHECK_RESERVE_MS,
  });
}
