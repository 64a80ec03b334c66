/** The side navigation: the service picker, the service's pages and, for an operator, all services. */
import { h, type Child } from './dom';
import { session } from './session';

const nav = document.getElementById('nav')!;

/** The pages of one service, in the navigation's order: route name and label. */
const SERVICE_PAGES: [string, string][] = [
  ['settings', 'Settings'],
  ['keys', 'API keys'],
  ['charges', 'Balance and charges'],
  ['verifications', 'Verifications'],
  ['conversion', 'Conversion'],
  ['templates', 'Templates'],
  ['rules', 'Delivery rules'],
  ['guard', 'Pumping guard'],
  ['webhooks', 'Webhooks'],
  ['activity', 'Activity'],
];

export function renderNav(sid: string | undefined, page: string): void {
  const items: Child[] = [];
  const me = session.me;
  if (me && me.services.length > 0) {
    // A service not among the user's (another member's, or none) is not claimed by the picker or the links.
    const known = me.services.some((s) => s.sid === sid);
    const select = h(
      'select',
      {
        'aria-label': 'Service',
        id: 'service-select',
        onchange: (event) => {
          location.hash = `#/s/${(event.target as HTMLSelectElement).value}/${page === 'operator' ? 'settings' : page}`;
        },
      },
      !!sid && !known && h('option', { value: '', selected: true, disabled: true }, 'Choose a service'),
      me.services.map((s) =>
        h('option', { value: s.sid, selected: s.sid === sid }, `${s.name} (${s.sid.slice(0, 8)}…)`),
      ),
    );
    items.push(h('h2', {}, 'Service'), select);
    const current = known ? sid! : me.services[0]!.sid;
    for (const [id, label] of SERVICE_PAGES) {
      items.push(
        h(
          'a',
          { href: `#/s/${current}/${id}`, 'aria-current': known && page === id ? 'page' : undefined },
          label,
        ),
      );
    }
  }
  if (me?.user.operator) {
    items.push(
      h('h2', {}, 'Operator'),
      h(
        'a',
        { href: '#/operator', 'aria-current': page === 'operator' ? 'page' : undefined },
        'All services',
      ),
    );
  }
  nav.replaceChildren(...items.map((i) => (typeof i === 'object' && i ? i : String(i ?? ''))));
}

export function clearNav(): void {
  nav.replaceChildren();
}
