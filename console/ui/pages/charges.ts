/** The balance and charges page: the last 30 days by day and by country, the latest charges, a CSV. */
import { api, jsonOf, request, statusMessage, TOKEN_KEY, type Json } from '../api';
import { action, h, show, table, when } from '../dom';

export async function chargesPage(sid: string): Promise<void> {
  const c = await api('GET', `/services/${sid}/charges?days=30`);
  const byDay = c.byDay as { key: string; count: number; amount: string }[];
  const byCountry = c.byCountry as { key: string; count: number; amount: string }[];
  const latest = c.latest as Json[];
  const download = action('Download CSV', async () => {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const response = await request(`/console/api/services/${sid}/charges.csv?days=30`, {
      headers: { authorization: `Bearer ${token ?? ''}` },
      credentials: 'omit',
    });
    if (!response.ok) {
      const message = (jsonOf(await response.text(), response.headers.get('content-type')) as Json)?.message;
      throw new Error(typeof message === 'string' ? message : statusMessage(response.status));
    }
    const url = URL.createObjectURL(await response.blob());
    const link = h('a', { href: url, download: `charges-${sid}.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  });
  show(
    'Balance and charges',
    h(
      'dl',
      { class: 'card kv' },
      h('dt', {}, 'Balance'),
      h('dd', { id: 'balance' }, `${String(c.balance)} USD`),
      h('dt', {}, 'Last 30 days'),
      h(
        'dd',
        {},
        `${String(c.count)} charges, ${String(c.total)} USD${c.truncated ? ' (the latest 5,000 only)' : ''}`,
      ),
    ),
    h('p', {}, download),
    h(
      'div',
      { class: 'grid2' },
      h(
        'div',
        {},
        h('h2', {}, 'By day (UTC)'),
        table(
          ['Day', 'Sends', 'USD'],
          byDay.map((d) => [d.key, d.count, d.amount]),
        ),
      ),
      h(
        'div',
        {},
        h('h2', {}, 'By country'),
        table(
          ['Country', 'Sends', 'USD'],
          byCountry.map((d) => [d.key, d.count, d.amount]),
        ),
        h(
          'p',
          { class: 'muted' },
          '"unknown": the verification is no longer kept (a week after it expired).',
        ),
      ),
    ),
    h('h2', {}, 'Latest charges'),
    table(
      ['Time', 'Verification', 'Country', 'USD'],
      latest.map((l) => [
        when(l.at),
        h(
          'a',
          { href: `#/s/${sid}/verification/${String(l.verificationSid)}` },
          h('code', {}, String(l.verificationSid)),
        ),
        String(l.country ?? '—'),
        String(l.amount),
      ]),
    ),
  );
}
