/** The AWS senders: only the deliver task's root imports this module, so only its bundle holds their clients. */
import type { Provider } from '../core/providers';
import { parseProviderConfig, providersInUse } from '../adapters/providers/config';
import { AwsSmsProvider } from '../adapters/providers/aws-sms';
import { AwsWhatsAppProvider } from '../adapters/providers/aws-whatsapp';
import { readRegisteredTemplates } from '../adapters/providers/registered-templates';
import type { Env } from './env';

/** The AWS providers `OTP_PROVIDERS` names, built from their settings (wiring/providers.ts lists them). */
export function awsSendersFromEnv(env: Env): Partial<Record<'aws-sms' | 'aws-whatsapp', Provider>> {
  const config = parseProviderConfig(env.OTP_PROVIDERS);
  const inUse = providersInUse(config);
  const senders: Partial<Record<'aws-sms' | 'aws-whatsapp', Provider>> = {};
  const region = env.AWS_REGION;
  if (inUse.includes('aws-sms')) {
    const carries = (channel: 'sms' | 'rcs') =>
      config.channels[channel] === 'aws-sms' ||
      Object.values(config.countries).some((map) => map[channel] === 'aws-sms');
    if (carries('sms') && !env.OTP_AWS_SMS_ORIGINATION_IDENTITY)
      throw new Error('aws-sms carries sms: set OTP_AWS_SMS_ORIGINATION_IDENTITY');
    if (carries('rcs') && !env.OTP_AWS_SMS_RCS_ORIGINATION_IDENTITY)
      throw new Error('aws-sms carries rcs: set OTP_AWS_SMS_RCS_ORIGINATION_IDENTITY (the RCS agent)');
    senders['aws-sms'] = new AwsSmsProvider({
      originationIdentity: env.OTP_AWS_SMS_ORIGINATION_IDENTITY,
      rcsOriginationIdentity: env.OTP_AWS_SMS_RCS_ORIGINATION_IDENTITY,
      configurationSetName: env.OTP_AWS_SMS_CONFIGURATION_SET,
      protectConfigurationId: env.OTP_AWS_SMS_PROTECT_CONFIGURATION_ID,
      maxPrice: env.OTP_AWS_SMS_MAX_PRICE,
      ...(env.OTP_AWS_SMS_REGISTERED_TEMPLATES && {
        registeredTemplates: readRegisteredTemplates(
          JSON.parse(env.OTP_AWS_SMS_REGISTERED_TEMPLATES),
          'OTP_AWS_SMS_REGISTERED_TEMPLATES',
        ),
      }),
      endpoint: env.OTP_AWS_SMS_ENDPOINT,
      region,
    });
  }
  if (inUse.includes('aws-whatsapp')) {
    if (!env.OTP_AWS_WHATSAPP_PHONE_NUMBER_ID || !env.OTP_AWS_WHATSAPP_TEMPLATE_NAME)
      throw new Error(
        'aws-whatsapp: set OTP_AWS_WHATSAPP_PHONE_NUMBER_ID and OTP_AWS_WHATSAPP_TEMPLATE_NAME',
      );
    senders['aws-whatsapp'] = new AwsWhatsAppProvider({
      originationPhoneNumberId: env.OTP_AWS_WHATSAPP_PHONE_NUMBER_ID,
      templateName: env.OTP_AWS_WHATSAPP_TEMPLATE_NAME,
      templateLanguage: env.OTP_AWS_WHATSAPP_TEMPLATE_LANGUAGE,
      metaApiVersion: env.OTP_AWS_WHATSAPP_META_API_VERSION,
      endpoint: env.OTP_AWS_WHATSAPP_ENDPOINT,
      region,
    });
  }
  return senders;
}
