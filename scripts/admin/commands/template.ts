/** `template add|list|default|clear-default`: message templates and the service's default. */
import { table, templateText } from '../format';
import * as parse from '../validate';
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

export const templateCommands: readonly Command[] = [
  templateAdd,
  templateList,
  templateDefault,
  templateClearDefault,
];
