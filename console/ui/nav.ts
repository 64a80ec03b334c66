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
      { 'aria-label': 'Service', id: 'service-select' },
      !!sid && !known && h('option', { value: '', selected: true, disabled: true }, 'Choose a service'),
      me.services.map((s) =>
        h('option', { value: s.sid, selected: s.sid === sid }, `${s.name} (${s.sid.slice(0, 8)}…)`),
      ),
    ) as HTMLSelectElement;
    pickOnIntent(select, (chosen) => {
      location.hash = `#/s/${chosen}/${page === 'operator' ? 'settings' : page}`;
    });
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

/**
 * Opens the service chosen in the picker when the user means it: at once when picked from the open list (mouse, or
 * the keyboard's Alt+Down and Enter), but on Enter only when moved through with the arrow keys while closed, where
 * each key press is a change: a new page on every press would take a keyboard user past the service they want
 * (WCAG 3.2.2, On Input). Leaving the picker without Enter puts it back on the page's service.
 */
function pickOnIntent(select: HTMLSelectElement, open: (sid: string) => void): void {
  const shown = select.value;
  let stepping = false;
  select.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && select.value !== shown && select.value !== '') {
      event.preventDefault();
      open(select.value);
    } else if (!event.altKey && STEPPING_KEYS.test(event.key)) stepping = true;
  });
  select.addEventListener('pointerdown', () => (stepping = false));
  select.addEventListener('change', () => {
    if (!stepping && select.value !== '') open(select.value);
  });
  select.addEventListener('blur', () => {
    stepping = false;
    if (select.value !== shown) select.value = shown;
  });
}

/**
 * Keys that move a closed select's choice: arrows, Home, End, Page Up/Down, and typing a name's letters (not the
 * space, which opens the list).
 */
const STEPPING_KEYS = /^(Arrow(Up|Down|Left|Right)|Home|End|Page(Up|Down)|[^ ])$/u;

export function clearNav(): void {
  nav.replaceChildren();
}
