/**
 * SMS templates registered with a country's regulator, a deployment setting (`otp:awsSmsRegisteredTemplates`,
 * `OTP_AWS_SMS_REGISTERED_TEMPLATES`). India's DLT: an SMS from a sender id must carry the principal entity id
 * and the template id the operator registered, and its text must match that template exactly, or carriers drop
 * it (SendTextMessage's `DestinationCountryParameters`, keys `IN_ENTITY_ID` and `IN_TEMPLATE_ID`; AWS End User
 * Messaging SMS, "Special requirements for sending SMS messages to recipients in India"). So for such a country
 * the registered text, with the code in its `{code}`, replaces the service's message template. No SDK here:
 * lib/provider-config.ts validates the setting at synth with the same reader.
 */
import { LONGEST_CODE } from '../../core/sms-segments';
import { isObject, isText } from '../shape';

/** The `{code}` placeholder of a registered text, as in the service's own message templates. */
const CODE_PLACEHOLDER = '{code}';

export interface RegisteredSmsTemplate {
  /** `DestinationCountryParameters` as SendTextMessage takes it. */
  parameters: Readonly<Record<string, string>>;
  /** The registered text, `{code}` where the code goes (exactly once). */
  text: string;
}

/**
 * The countries a registered template can be given for, and the DestinationCountryParameters keys of each
 * (the pinpoint-sms-voice-v2 model's DestinationCountryParameterKey: India's only, today).
 */
const COUNTRY_PARAMETERS: Readonly<Record<string, { entityId: string; templateId: string }>> = {
  IN: { entityId: 'IN_ENTITY_ID', templateId: 'IN_TEMPLATE_ID' },
};

/** DestinationCountryParameterValue: 1 to 64 characters, no white space (the model's length and pattern). */
const PARAMETER_VALUE = /^\S{1,64}$/;
/**
 * SendTextMessage's MessageBody: 1 to 1600 characters (the model's TextMessageBody). The limit is the sent
 * text's, with the longest code in place of `{code}`: a caller's code is longer than the placeholder.
 */
const MAX_BODY = 1600;

/** The registered text with the code in it. */
export const renderRegistered = (template: RegisteredSmsTemplate, code: string): string =>
  template.text.replace(CODE_PLACEHOLDER, code);

/**
 * Reads the setting: `{"IN": {"entityId": "…", "templateId": "…", "text": "… {code} …"}}`. Throws naming every
 * problem (synth shows it; a function refuses to start with it).
 */
export function readRegisteredTemplates(json: unknown, where: string): Record<string, RegisteredSmsTemplate> {
  if (!isObject(json)) throw new Error(`${where} must be a JSON object of countries`);
  const issues: string[] = [];
  const templates: Record<string, RegisteredSmsTemplate> = {};
  for (const [country, value] of Object.entries(json)) {
    const keys = COUNTRY_PARAMETERS[country];
    if (!keys) {
      issues.push(
        `${country}: AWS takes registered-template parameters for ${Object.keys(COUNTRY_PARAMETERS).join(', ')} only`,
      );
      continue;
    }
    if (!isObject(value)) {
      issues.push(`${country}: expected {entityId, templateId, text}`);
      continue;
    }
    const { entityId, templateId, text } = value;
    const unknown = Object.keys(value).filter((key) => !['entityId', 'templateId', 'text'].includes(key));
    if (unknown.length > 0) issues.push(`${country}: unknown key ${unknown.join(', ')}`);
    if (typeof entityId !== 'string' || !PARAMETER_VALUE.test(entityId))
      issues.push(`${country}.entityId: the registered entity id (1-64 characters, no spaces)`);
    if (typeof templateId !== 'string' || !PARAMETER_VALUE.test(templateId))
      issues.push(`${country}.templateId: the registered template id (1-64 characters, no spaces)`);
    if (
      !isText(text, MAX_BODY, 1) ||
      text.split(CODE_PLACEHOLDER).length !== 2 ||
      [...text.replace(CODE_PLACEHOLDER, LONGEST_CODE)].length > MAX_BODY
    )
      issues.push(
        `${country}.text: the registered text exactly, with ${CODE_PLACEHOLDER} once where the code goes (at most ${MAX_BODY} characters with a ${LONGEST_CODE.length}-character code)`,
      );
    else if (typeof entityId === 'string' && typeof templateId === 'string')
      templates[country] = {
        parameters: { [keys.entityId]: entityId, [keys.templateId]: templateId },
        text,
      };
  }
  if (issues.length > 0) throw new Error(`${where} is not valid: ${issues.join('; ')}`);
  return templates;
}
