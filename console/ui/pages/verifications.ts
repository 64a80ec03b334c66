/** The verifications page (latest, or searched by SID or number) and one verification's timeline. */
import { api, type Json } from '../api';
import { badge, formError, h, show, submitted, table, when } from '../dom';

export async function verificationsPage(sid: string, q = ''): Promise<void> {
  const data = await api<{ verifications: Json[]; searchedLatest: number | null; listedAtMost: number }>(
    'GET',
    `/services/${sid}/verifications${q ? `?q=${encodeURIComponent(q)}` : ''}`,
  );
  const input = h('input', {
    id: 'search',
    type: 'search',
    value: q,
    placeholder: 'VE… SID or phone number',
    'aria-label': 'Search',
  }) as HTMLInputElement;
  const err = formError('search-error', [input]);
  // A search the API refuses ("hello") is answered under the box; the page stays.
  const form = h(
    'form',
    {
      class: 'row',
      role: 'search',
      onsubmit: submitted(err, () => verificationsPage(sid, input.value.trim())),
    },
    input,
    h('button', { type: 'submit' }, 'Search'),
  );
  show(
    'Verifications',
    form,
    err,
    data.searchedLatest !== null &&
      h('p', { class: 'muted' }, `A number is searched among the latest ${data.searchedLatest} sends.`),
    !q &&
      data.verifications.length >= data.listedAtMost &&
      h(
        'p',
        { class: 'muted' },
        `The latest ${data.listedAtMost} sends, newest first: search by SID or number for an older one.`,
      ),
    table(
      ['Created', 'SID', 'To', 'Status', 'Delivery', 'Channel', 'USD'],
      data.verifications.map((v) => [
        when(v.dateCreated),
        h('a', { href: `#/s/${sid}/verification/${String(v.sid)}` }, h('code', {}, String(v.sid))),
        String(v.to),
        badge(String(v.status)),
        badge(String(v.deliveryStatus)),
        String(v.channel ?? '—'),
        String(v.price),
      ]),
      q ? 'No verification found.' : 'No verifications yet.',
    ),
  );
}

export async function verificationPage(sid: string, ve: string): Promise<void> {
  const t = await api('GET', `/services/${sid}/verifications/${ve}`);
  const entries = t.entries as { kind: string; at?: string; offsetSeconds?: number; text: string }[];
  show(
    'Verification',
    h(
      'dl',
      { class: 'card kv' },
      h('dt', {}, 'SID'),
      h('dd', {}, h('code', {}, String(t.sid))),
      h('dt', {}, 'To'),
      h('dd', {}, `${String(t.to)} ${t.country ? `(${String(t.country)})` : ''}`),
      h('dt', {}, 'Status'),
      h(
        'dd',
        {},
        badge(String(t.status)),
        ' ',
        badge(String(t.deliveryStatus)),
        ' ',
        String(t.channel ?? ''),
      ),
      h('dt', {}, 'Price'),
      h('dd', {}, `${String(t.price)} USD`),
    ),
    h('h2', {}, 'Timeline'),
    h(
      'ol',
      { class: 'timeline', id: 'timeline' },
      entries.map((e) =>
        h(
          'li',
          { class: e.kind },
          h('span', { class: 't' }, e.offsetSeconds !== undefined ? `+${e.offsetSeconds.toFixed(1)} s` : ''),
          ' ',
          e.text,
        ),
      ),
    ),
    h('p', {}, h('a', { href: `#/s/${sid}/verifications` }, '← All verifications')),
  );
}
