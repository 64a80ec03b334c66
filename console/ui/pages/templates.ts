/** The templates page: the service's templates, the default one, and adding a template. */
import { api, type Json } from '../api';
import {
  MAX_TEMPLATE_LENGTH,
  templateSize,
  type TemplateSize,
} from '../../../functions/core/accounts/formats';
import { LONGEST_CODE } from '../../../functions/core/sms-segments';
import { action, announce, badge, copyButton, formError, h, show, submitted, table } from '../dom';

const parts = (n: number) => `${n} part${n === 1 ? '' : 's'}`;

/**
 * The SMS a template makes, measured as the server measures it: with the longest code a send can carry, against
 * the service's part limit (the server refuses a template over it).
 */
function smsSizeText(template: string, limit: number): string {
  const { encoding, units, segments, overLimit } = templateSize(template, limit);
  const unitName = encoding === 'GSM-7' ? 'characters' : 'UTF-16 units';
  return (
    `SMS size: ${encoding}, ${units} ${unitName}, ${parts(segments)} ` +
    `(with a ${LONGEST_CODE.length}-character code)` +
    (overLimit ? `: over this service's limit of ${parts(limit)}, the server will refuse it` : '')
  );
}

/** A saved template's size; one over the limit (saved before the limit was lowered) is flagged, not refused. */
function smsCell(sms: TemplateSize): HTMLElement {
  return h(
    'span',
    {},
    `${sms.encoding}, ${parts(sms.segments)}`,
    sms.overLimit && [
      ' ',
      h('span', { class: 'badge over-limit' }, 'over the limit'),
      h('span', { class: 'muted' }, ': still sends, billed per part by the carrier'),
    ],
  );
}

export async function templatesPage(sid: string): Promise<void> {
  const data = await api<{ smsPartLimit: number; templates: (Json & { sms: TemplateSize })[] }>(
    'GET',
    `/services/${sid}/templates`,
  );
  const limit = data.smsPartLimit;
  const size = h('p', { id: 'template-size', class: 'muted', 'aria-live': 'polite' }, smsSizeText('', limit));
  const body = h('textarea', {
    id: 'template-body',
    maxlength: String(MAX_TEMPLATE_LENGTH),
    placeholder: 'Your code is {code}.',
    'aria-describedby': 'template-size',
    oninput: () => {
      size.textContent = smsSizeText(body.value, limit);
      size.className = templateSize(body.value, limit).overLimit ? 'error' : 'muted';
    },
  }) as HTMLTextAreaElement;
  const makeDefault = h('input', { id: 'template-default', type: 'checkbox' }) as HTMLInputElement;
  const err = formError('template-error', [body]);
  show(
    'Templates',
    h(
      'p',
      { id: 'sms-part-limit', class: 'muted' },
      `A template's SMS may take at most ${parts(limit)} here, measured with the longest code a send can carry.`,
    ),
    table(
      ['SID', 'Text', 'Locale', 'SMS', ''],
      data.templates.map((t) => [
        h('span', { class: 'row' }, h('code', {}, String(t.sid)), copyButton(String(t.sid))),
        String(t.body),
        String(t.locale),
        smsCell(t.sms),
        t.default
          ? badge('default')
          : h(
              'span',
              { class: 'row' },
              action(
                'Make default',
                async () => {
                  await api('POST', `/services/${sid}/templates/${String(t.sid)}/default`);
                  await templatesPage(sid);
                  return `Template ${String(t.sid)} is the default.`;
                },
                'secondary',
              ),
              action(
                'Remove',
                async () => {
                  if (!confirm(`Remove template ${String(t.sid)}? Sends naming it are then refused.`)) return;
                  await api('POST', `/services/${sid}/templates/${String(t.sid)}/remove`);
                  await templatesPage(sid);
                  return `Template ${String(t.sid)} removed.`;
                },
                'danger',
              ),
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
        onsubmit: submitted(err, async () => {
          await api('POST', `/services/${sid}/templates`, { body: body.value, default: makeDefault.checked });
          await templatesPage(sid);
          announce('Template added.');
        }),
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
