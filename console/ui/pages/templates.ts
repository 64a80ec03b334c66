/** The templates page: the service's templates, the default one, and adding a template. */
import { api, type Json } from '../api';
import { MAX_TEMPLATE_LENGTH } from '../../../functions/core/accounts/formats';
import { LONGEST_CODE, templateSmsSize } from '../../../functions/core/sms-segments';
import { action, badge, copyButton, formError, h, show, table } from '../dom';

/** The SMS a template makes, measured as the server measures it: with the longest code a send can carry. */
function smsSizeText(template: string): string {
  const { encoding, units, segments } = templateSmsSize(template);
  const unitName = encoding === 'GSM-7' ? 'characters' : 'UTF-16 units';
  return (
    `SMS size: ${encoding}, ${units} ${unitName}, ${segments} part${segments === 1 ? '' : 's'} ` +
    `(with a ${LONGEST_CODE.length}-character code)`
  );
}

export async function templatesPage(sid: string): Promise<void> {
  const data = await api<{ templates: Json[] }>('GET', `/services/${sid}/templates`);
  const size = h('p', { id: 'template-size', class: 'muted', 'aria-live': 'polite' }, smsSizeText(''));
  const body = h('textarea', {
    id: 'template-body',
    maxlength: String(MAX_TEMPLATE_LENGTH),
    placeholder: 'Your code is {code}.',
    'aria-describedby': 'template-size',
    oninput: () => (size.textContent = smsSizeText(body.value)),
  }) as HTMLTextAreaElement;
  const makeDefault = h('input', { id: 'template-default', type: 'checkbox' }) as HTMLInputElement;
  const err = formError();
  show(
    'Templates',
    table(
      ['SID', 'Text', 'Locale', ''],
      data.templates.map((t) => [
        h('span', { class: 'row' }, h('code', {}, String(t.sid)), copyButton(String(t.sid))),
        String(t.body),
        String(t.locale),
        t.default
          ? badge('default')
          : action(
              'Make default',
              async () => {
                await api('POST', `/services/${sid}/templates/${String(t.sid)}/default`);
                await templatesPage(sid);
              },
              'secondary',
            ),
      ]),
      'No templates.',
    ),
    h(
      'p',
      {},
      "SMS to India carries the deployment's DLT-registered text instead of these when the deployment " +
        'registered one (otp:awsSmsRegisteredTemplates, docs/providers.md): carriers there drop any other text.',
    ),
    h('h2', {}, 'Add a template'),
    h(
      'form',
      {
        class: 'card',
        onsubmit: (event) => {
          event.preventDefault();
          void api('POST', `/services/${sid}/templates`, { body: body.value, default: makeDefault.checked })
            .then(() => templatesPage(sid))
            .catch((error: Error) => (err.textContent = error.message));
        },
      },
      h('label', { for: 'template-body' }, 'Text (must contain {code})'),
      body,
      size,
      h('div', { class: 'row' }, makeDefault, h('label', { for: 'template-default' }, 'Make it the default')),
      h('p', {}, h('button', { type: 'submit' }, 'Add template')),
      err,
    ),
  );
}
