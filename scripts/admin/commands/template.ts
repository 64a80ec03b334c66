/** `template add|list|remove|default|clear-default|limit`: message templates and the service's default. */
import { table, templateText } from '../format';
import * as parse from '../validate';
import { smsPartLimit } from '../../../functions/core/accounts/accounts';
import { AdminError, command, type Command } from '../framework';
import { HX, VA, loadService, sidOnly } from './common';

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
    const template = await context.accounts.addTemplate(context.change, sid, { body, locale, makeDefault });
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
    await loadService(context, sid);
    const { service, templates } = await context.accounts.templates(sid);
    const defaultSid = service.defaultTemplate?.sid;
    const over = templates.filter((t) => t.sms.overLimit).length;
    return {
      json: {
        serviceSid: sid,
        defaultTemplateSid: defaultSid ?? null,
        smsPartLimit: smsPartLimit(service),
        templates: templates.map((template) => ({ ...template, default: template.sid === defaultSid })),
      },
      text:
        templates.length === 0
          ? 'No templates.'
          : [
              table(
                ['', 'Template SID', 'Locale', 'SMS parts', 'Text'],
                templates.map((t) => [
                  t.sid === defaultSid ? '*' : '',
                  t.sid,
                  t.locale,
                  `${t.sms.segments} ${t.sms.encoding}${t.sms.overLimit ? ' OVER LIMIT' : ''}`,
                  t.body,
                ]),
              ),
              ...(over > 0
                ? [
                    `${over} template${over === 1 ? ' takes' : 's take'} more than the service's ${smsPartLimit(service)} SMS parts: they still send, and are billed by the carrier per part.`,
                  ]
                : []),
            ].join('\n'),
    };
  },
});

const templateRemove = command({
  words: ['template', 'remove'],
  args: ['<VA>', '<HX>'],
  summary: 'Delete a template (not the default one); a send naming it then gets unknown_template',
  examples: [`template remove ${VA} ${HX}`],
  parse: ([sid, template]) => ({ sid: parse.serviceSid(sid!), templateSid: parse.templateSid(template!) }),
  run: async (context, { sid, templateSid }) => {
    const service = await loadService(context, sid);
    if (service.defaultTemplate?.sid === templateSid)
      throw new AdminError(
        `${templateSid} is the default template: make another the default (template default) or clear it first`,
      );
    await context.accounts.deleteTemplate(context.change, sid, templateSid);
    return { json: { serviceSid: sid, removed: templateSid }, text: `Removed template ${templateSid}.` };
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
    await context.accounts.setDefaultTemplate(context.change, sid, templateSid);
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
    await context.accounts.clearDefaultTemplate(context.change, sid);
    return {
      json: { serviceSid: sid, defaultTemplateSid: null },
      text: 'No default template: sends must name a TemplateSid.',
    };
  },
});

const templateLimit = command({
  words: ['template', 'limit'],
  args: ['<VA>', '<parts>'],
  summary: 'Set how many SMS parts a new template may take (default 2; the price of a send stays one charge)',
  details: [
    'A template is measured with the longest code (10 characters) in GSM-7 or UCS-2, as carriers bill it.',
    'Templates already over a lowered limit keep working; template list flags them.',
  ],
  examples: [`template limit ${VA} 3`],
  parse: ([sid, parts]) => ({ sid: parse.serviceSid(sid!), parts: parse.smsParts(parts!) }),
  run: async (context, { sid, parts }) => {
    await context.accounts.setTemplateSmsParts(context.change, sid, parts);
    return {
      json: { serviceSid: sid, smsPartLimit: parts },
      text: `New templates of this service may take up to ${parts} SMS part${parts === 1 ? '' : 's'}.`,
    };
  },
});

export const templateCommands: readonly Command[] = [
  templateAdd,
  templateList,
  templateRemove,
  templateDefault,
  templateClearDefault,
  templateLimit,
];
