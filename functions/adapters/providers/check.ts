/**
 * The post-deploy check's provider side (functions/core/provider-check.ts runs it): for each provider, calls that
 * send nothing to anyone, made with the deliver function's own role and settings, and AWS's own error when one
 * fails. What no such call can tell is said in `cannotCheck` (docs/providers.md, "The post-deploy check").
 */
import { createPrivateKey, createPublicKey, createVerify } from 'node:crypto';
import { errorText, type CheckOutcome, type ProviderChecker } from '../../core/provider-check';
import type { Channel } from '../../core/routing';
import type { AwsSmsProvider } from './aws-sms';
import type { AwsWhatsAppProvider } from './aws-whatsapp';
import type { VonageCredentials } from './vonage';
import { applicationJwt } from './vonage-jwt';

/** The code in a dry run's text: a fixed sample, since a check event carries no code and nothing is sent. */
const CHECK_SAMPLE_CODE = '123456';

/**
 * DryRun's rate: AWS allows five message parts per second in dry runs, fewer where the origination identity's
 * own limit is lower (the model's DryRun). One every 250 ms stays under five; a throttled one is tried once more.
 */
const DRY_RUN_INTERVAL_MS = 250;
const THROTTLED_RETRY_MS = 1_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface CheckClock {
  now(): Date;
  sleep(ms: number): Promise<void>;
}

const systemClock: CheckClock = { now: () => new Date(), sleep };

/** AWS End User Messaging SMS: a DryRun SendTextMessage per channel and destination country. */
export function awsSmsChecker(
  provider: Pick<AwsSmsProvider, 'dryRun' | 'hasRegisteredTemplate'>,
  clock: CheckClock = systemClock,
): ProviderChecker {
  let last = 0;
  const paced = async <T>(call: () => Promise<T>): Promise<T> => {
    const wait = last + DRY_RUN_INTERVAL_MS - clock.now().getTime();
    if (wait > 0) await clock.sleep(wait);
    last = clock.now().getTime();
    return call();
  };
  return {
    scope: 'country',
    cannotCheck: [
      'delivery to handsets and the carriers’ filtering: a dry run goes no further than AWS',
      'that the configuration set’s events reach the ProviderEventsTopic (receipts)',
      'India: that the text matches the registered DLT template (the carriers compare it, not AWS: unverified)',
    ],
    async check({ channel, country, to }) {
      const outcomes: CheckOutcome[] = [];
      if (channel === 'sms' && country === 'IN' && !provider.hasRegisteredTemplate('IN'))
        outcomes.push({
          check: 'India DLT template',
          ok: false,
          detail:
            'SMS to India from a sender id needs DestinationCountryParameters IN_ENTITY_ID and IN_TEMPLATE_ID ' +
            'and the registered text: set otp:awsSmsRegisteredTemplates.IN (docs/providers.md)',
        });
      const message = {
        channel,
        to: to!,
        body: `Your verification code is ${CHECK_SAMPLE_CODE}`,
        code: CHECK_SAMPLE_CODE,
        ...(country !== undefined && { country }),
        reference: 'providers-check',
        expiresAt: new Date(clock.now().getTime() + 600_000).toISOString(),
      };
      const dryRun = () => paced(() => provider.dryRun(message));
      try {
        await dryRun().catch(async (error: unknown) => {
          if ((error as { name?: unknown }).name !== 'ThrottlingException') throw error;
          await clock.sleep(THROTTLED_RETRY_MS);
          return dryRun();
        });
        outcomes.push({ check: 'DryRun SendTextMessage', ok: true, detail: `to ${to}: accepted, not sent` });
      } catch (error) {
        outcomes.push({
          check: 'DryRun SendTextMessage',
          ok: false,
          detail: `to ${to}: ${errorText(error)}`,
        });
      }
      return outcomes;
    },
  };
}

/** AWS End User Messaging Social: GetLinkedWhatsAppBusinessAccountPhoneNumber of the configured number. */
export function awsWhatsAppChecker(provider: AwsWhatsAppProvider): ProviderChecker {
  return {
    scope: 'channel',
    cannotCheck: [
      'that Meta approved the template under the configured name and language',
      'that Meta serves the configured metaApiVersion (synth checks it against Meta’s announced dates only)',
      'that the WhatsApp Business Account’s event destination reaches the ProviderEventsTopic (receipts)',
      'a SendWhatsAppMessage grant edited by hand apart from this read’s (the stack grants both together)',
    ],
    async check() {
      try {
        const number = await provider.linkedPhoneNumber();
        return [
          { check: 'GetLinkedWhatsAppBusinessAccountPhoneNumber', ok: true, detail: number || 'found' },
        ];
      } catch (error) {
        return [
          { check: 'GetLinkedWhatsAppBusinessAccountPhoneNumber', ok: false, detail: errorText(error) },
        ];
      }
    },
  };
}

/** A Vonage application id: a UUID, as the dashboard shows it. */
const APPLICATION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Vonage: no call to Vonage (its Messages API has no dry run). The secret is read as the deliver function reads
 * it; its private key must parse and sign an application JWT that its own public key verifies; the application
 * id must be a UUID; the signature secret must be there (16 characters or more); the channel needs a sender.
 */
export function vonageChecker(
  credentials: () => Promise<VonageCredentials>,
  from: Partial<Record<Channel, string>>,
  clock: CheckClock = systemClock,
): ProviderChecker {
  let found: Promise<CheckOutcome[]> | undefined;
  const checkCredentials = async (): Promise<CheckOutcome[]> => {
    let loaded: VonageCredentials;
    try {
      loaded = await credentials();
    } catch (error) {
      return [{ check: 'secret', ok: false, detail: errorText(error) }];
    }
    const { applicationId, privateKey } = loaded;
    const outcomes: CheckOutcome[] = [
      APPLICATION_ID.test(applicationId)
        ? { check: 'application id', ok: true, detail: 'a UUID' }
        : { check: 'application id', ok: false, detail: 'not a UUID: copy it from the Vonage dashboard' },
    ];
    try {
      const key = createPrivateKey(privateKey);
      const [header, payload, signature] = applicationJwt(applicationId, privateKey, clock.now()).split('.');
      const verified = createVerify('RSA-SHA256')
        .update(`${header}.${payload}`)
        .verify(createPublicKey(key), Buffer.from(signature!, 'base64url'));
      outcomes.push(
        verified
          ? { check: 'private key', ok: true, detail: 'parses and signs an RS256 application JWT' }
          : {
              check: 'private key',
              ok: false,
              detail: 'its signature does not verify with its own public key',
            },
      );
    } catch (error) {
      // The key's text is never shown: only that it did not parse or sign.
      outcomes.push({
        check: 'private key',
        ok: false,
        detail: `does not parse or sign (${error instanceof Error ? error.name : 'error'})`,
      });
    }
    // readVonageCredentials refuses a secret without one of 16 characters or more.
    outcomes.push({ check: 'signature secret', ok: true, detail: 'present' });
    return outcomes;
  };
  return {
    scope: 'channel',
    cannotCheck: [
      'that Vonage knows the application and holds this private key’s public key (Vonage is not called)',
      'the account’s balance, and the senders’ registration (Viber Business Message ID, WhatsApp number and template, RCS agent)',
      'that the signature secret equals the dashboard’s: only a signed status webhook shows it',
    ],
    async check({ channel }) {
      found ??= checkCredentials();
      const sender = from[channel];
      return [
        ...(await found),
        sender
          ? { check: 'sender', ok: true, detail: sender }
          : { check: 'sender', ok: false, detail: `no sender for ${channel} (otp:vonageFrom.${channel})` },
      ];
    },
  };
}
