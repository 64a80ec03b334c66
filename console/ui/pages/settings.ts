/** The settings page of a service: its facts and its enabled channels. */
import { api, type Json } from '../api';
import { action, copyButton, h, saveCopy, show, when, type Copy } from '../dom';
import type { HighRisk } from './rules';

export async function settingsPage(sid: string): Promise<void> {
  const s = await api('GET', `/services/${sid}`);
  const channels = s.channels as string[];
  const boxes = (s.allChannels as string[]).map((c) => {
    const box = h('input', {
      type: 'checkbox',
      id: `ch-${c}`,
      value: c,
      checked: channels.includes(c),
    }) as HTMLInputElement;
    return { c, box };
  });
  const template = s.defaultTemplate as Json | null;
  // The boxes are sent as the whole list, with the version of the copy they show: made on an older one, refused.
  const copy: Copy = { id: 'channels-outdated', what: 'the channels', draw: () => settingsPage(sid) };
  show(
    'Settings',
    h(
      'dl',
      { class: 'card kv' },
      h('dt', {}, 'Service SID'),
      h('dd', { class: 'row' }, h('code', { id: 'service-sid' }, sid), copyButton(sid, 'Copy SID')),
      h('dt', {}, 'Name'),
      h('dd', {}, String(s.name)),
      h('dt', {}, 'Balance'),
      h('dd', {}, `${String(s.balance)} USD`),
      h('dt', {}, 'Default template'),
      h(
        'dd',
        {},
        template
          ? h('span', {}, h('code', {}, String(template.sid)), ' ', String(template.body))
          : 'none (sends must name a TemplateSid)',
      ),
      h('dt', {}, 'Created'),
      h('dd', {}, when(s.createdAt)),
      h('dt', {}, 'Pumping guard'),
      h(
        'dd',
        { id: 'guard-summary' },
        `${String(s.guardLevel)}; RiskCheck=disable ${s.riskCheckOptOut === true ? 'honoured' : 'ignored'} `,
        h('a', { href: `#/s/${sid}/guard` }, '(guard)'),
      ),
      h('dt', {}, 'Sends to'),
      h(
        'dd',
        { id: 'allowed-summary' },
        s.allowedCountries === null
          ? 'every served country'
          : (s.excludedHighRiskCountries as HighRisk[]).length > 0
            ? `the countries of its allow-list; left out as high risk for SMS pumping: ${(s.excludedHighRiskCountries as HighRisk[]).map((e) => `${e.country} ${e.name}`).join(', ')}`
            : 'the countries of its allow-list',
        ' ',
        h('a', { href: `#/s/${sid}/rules` }, '(delivery rules)'),
      ),
    ),
    h('h2', {}, 'Enabled channels'),
    h(
      'div',
      { class: 'card' },
      h(
        'div',
        { class: 'row' },
        boxes.map(({ c, box }) => h('span', {}, box, h('label', { for: `ch-${c}`, class: 'inline' }, c))),
      ),
      h(
        'p',
        {},
        action(
          'Save channels',
          () =>
            saveCopy(copy, () =>
              api('PUT', `/services/${sid}/channels`, {
                channels: boxes.filter((b) => b.box.checked).map((b) => b.c),
                channelsVersion: s.channelsVersion,
              }),
            ),
          '',
          boxes.map((b) => b.box),
        ),
      ),
    ),
  );
}
