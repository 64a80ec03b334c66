/** `service create`, `service show`. */
import { CHANNELS } from '../../../functions/core/routing';
import { serviceJson, serviceText } from '../format';
import * as parse from '../validate';
import { UsageError, command, type Command } from '../framework';
import { VA, loadService, sidOnly } from './common';
import { keyText } from './key';

const serviceCreate = command({
  words: ['service', 'create'],
  args: [],
  options: ['name', 'balance', 'channels', 'template', 'no-default-template', 'no-key', 'secret-arn'],
  optionsUsage:
    '--name NAME [--balance USD] [--channels LIST] [--template TEXT | --no-default-template] [--no-key] [--secret-arn ARN]',
  summary: 'Create a service and issue its first API key',
  details: [
    '--balance USD defaults to 0; --channels defaults to all five channels.',
    'The default template is --template TEXT, or "Your NAME verification code is {code}." when not given;',
    '--no-default-template creates none (sends must then name a TemplateSid). --no-key issues no API key.',
    'On a deployed table the key needs --secret-arn ARN (the stack output ApiKeyTagSecretArn).',
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
  run: async ({ accounts, change }, { issueKey, ...input }) => {
    // The deployment key first: a service must not be made when its key cannot be.
    if (issueKey) await accounts.readyToIssueKeys();
    const service = await accounts.createService(change, input);
    const key = issueKey ? await accounts.issueApiKey(change, service.sid) : undefined;
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

export const serviceCommands: readonly Command[] = [serviceCreate, serviceShow];
