/** The conversion page: accepted, delivered and verified sends by channel and country, as bars. */
import { api, type Json } from '../api';
import { app, h, show } from '../dom';

function bars(rows: { key: string; values: number[] }[], labels: string[]): HTMLElement {
  const max = Math.max(1, ...rows.map((r) => r.values[0] ?? 0));
  return h(
    'div',
    {},
    h(
      'p',
      { class: 'legend muted' },
      labels.map((l, i) => h('span', { class: `b${i}` }, l)),
    ),
    h(
      'div',
      { class: 'bars' },
      rows.flatMap((r) => [
        h('span', {}, r.key),
        h(
          'div',
          {
            class: 'bar',
            role: 'img',
            'aria-label': `${r.key}: ${r.values.map((v, i) => `${labels[i]} ${v}`).join(', ')}`,
          },
          // Segments: verified, then delivered but not verified, then sent but not delivered.
          [
            { cls: 'b2', n: r.values[2] ?? 0 },
            { cls: 'b1', n: (r.values[1] ?? 0) - (r.values[2] ?? 0) },
            { cls: 'b0', n: (r.values[0] ?? 0) - (r.values[1] ?? 0) },
          ].map((seg) => h('span', { class: seg.cls, 'data-w': String((Math.max(0, seg.n) / max) * 100) })),
        ),
        h('span', { class: 'muted' }, r.values.join(' / ')),
      ]),
    ),
  );
}

/** Bar widths are set from script (CSSOM), not from a style attribute: the policy allows no inline style. */
function sizeBars(root: HTMLElement): void {
  for (const span of root.querySelectorAll<HTMLElement>('[data-w]')) span.style.width = `${span.dataset.w}%`;
}

export async function conversionPage(sid: string): Promise<void> {
  const c = await api<{ truncated: boolean; windows: Record<string, Json> }>(
    'GET',
    `/services/${sid}/conversion`,
  );
  const section = (label: string, w: Json) => {
    const rows = (list: Json[]) =>
      list.map((r) => ({
        key: String(r.key),
        values: [Number(r.sent), Number(r.delivered), Number(r.verified)],
      }));
    const pct = (n: unknown) =>
      Number(w.sent) > 0 ? `${Math.round((Number(n) / Number(w.sent)) * 100)}%` : '—';
    return h(
      'section',
      { class: 'card', 'aria-label': label },
      h('h2', {}, label),
      h(
        'p',
        {},
        `${String(w.sent)} accepted sends, ${String(w.delivered)} delivered (${pct(w.delivered)}), ${String(w.verified)} verified (${pct(w.verified)})`,
      ),
      h('h3', {}, 'By channel'),
      bars(rows(w.byChannel as Json[]), ['sent', 'delivered', 'verified']),
      h('h3', {}, 'By country'),
      bars(rows(w.byCountry as Json[]), ['sent', 'delivered', 'verified']),
    );
  };
  show(
    'Conversion',
    h(
      'p',
      { class: 'muted' },
      'From the table: each charge line is an accepted send; its verification says whether it was delivered and verified.' +
        (c.truncated ? ' The latest 1,000 sends only.' : ''),
    ),
    h(
      'div',
      { class: 'grid2' },
      section('Last 24 hours', c.windows['24h']!),
      section('Last 7 days', c.windows['7d']!),
    ),
  );
  sizeBars(app);
}
