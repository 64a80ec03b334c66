/** The operator's page: every service, its balance and top-up, and creating a service. */
import { api } from '../api';
import { action, announce, formError, h, show, submitted, table } from '../dom';
import { loadMe, session } from '../session';

export async function operatorPage(): Promise<void> {
  const name = h('input', { id: 'new-name', required: true, maxlength: '100' }) as HTMLInputElement;
  const balance = h('input', { id: 'new-balance', value: '0', inputmode: 'decimal' }) as HTMLInputElement;
  const err = formError('create-error', [name, balance], (message) =>
    /balance|USD|amount/i.test(message) ? [balance] : /name/i.test(message) ? [name] : [name, balance],
  );
  const balanceCells = new Map<string, HTMLElement>();
  const rows = session.me!.services.map((s) => {
    const amount = h('input', {
      'aria-label': `Top-up for ${s.name}`,
      size: '6',
      inputmode: 'decimal',
      placeholder: 'USD',
    }) as HTMLInputElement;
    // One key per top-up meant: kept when it fails (a retry of a top-up whose answer was lost credits nothing more),
    // new when the amount changes or it succeeds.
    let key = newTopUpKey();
    amount.addEventListener('input', () => (key = newTopUpKey()));
    const balanceCell = h('span', {}, '…');
    balanceCells.set(s.sid, balanceCell);
    return [
      h('a', { href: `#/s/${s.sid}/settings` }, s.name),
      h('code', {}, s.sid),
      balanceCell,
      h(
        'span',
        { class: 'row' },
        amount,
        action(
          'Top up',
          async () => {
            const result = await api('POST', `/services/${s.sid}/topup`, {
              amount: amount.value.trim(),
              key,
            });
            balanceCell.textContent = `${String(result.balance)} USD`;
            amount.value = '';
            key = newTopUpKey();
            // A retry after an error: the first try had been credited, and this one added nothing.
            if (result.alreadyCredited === true) return 'Already credited: nothing more added.';
            announce(`Topped up ${s.name}: the balance is ${String(result.balance)} USD.`);
          },
          'secondary',
          [amount],
        ),
      ),
    ];
  });
  // Every balance in one request, not one a service (the console's per-user limit counts each request).
  void api('GET', '/services').then(
    (x) => {
      for (const s of x.services as { sid: string; balance: string | null }[]) {
        const cell = balanceCells.get(s.sid);
        if (cell) cell.textContent = s.balance === null ? '-' : `${s.balance} USD`;
      }
    },
    () => {
      for (const cell of balanceCells.values()) cell.textContent = 'unavailable: reload the page';
    },
  );
  show(
    'All services',
    table(['Name', 'SID', 'Balance', 'Top up'], rows, 'No services yet.'),
    h('h2', {}, 'Create a service'),
    h(
      'form',
      {
        class: 'card',
        onsubmit: submitted(err, async () => {
          const created = await api('POST', '/services', {
            name: name.value,
            balance: balance.value.trim() || '0',
          });
          await loadMe();
          location.hash = `#/s/${String(created.sid)}/settings`;
        }),
      },
      h('label', { for: 'new-name' }, 'Name'),
      name,
      h('label', { for: 'new-balance' }, 'Opening balance (USD)'),
      balance,
      h(
        'p',
        { class: 'muted' },
        'A new service sends to every served country but the few a messaging provider names as high risk for SMS pumping; its settings page lists them, its delivery rules page changes them.',
      ),
      h('p', {}, h('button', { type: 'submit' }, 'Create service')),
      err,
    ),
    h(
      'p',
      { class: 'muted' },
      'To give a customer a service: create their user in the user pool and add them as a member (docs/console.md).',
    ),
  );
}

/** 128 random bits in hex (getRandomValues: also where the page is not a secure context). */
function newTopUpKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join(
    '',
  );
}
