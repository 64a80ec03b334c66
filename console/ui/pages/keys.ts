/** The API keys page: issue (the key shown once), list and revoke. */
import { api, type Json } from '../api';
import { action, badge, copyButton, h, show, table, when } from '../dom';

export async function keysPage(sid: string, issued?: { apiKey: string; keyId: string }): Promise<void> {
  const { keys, activeKeys, keyLimit } = await api<{ keys: Json[]; activeKeys: number; keyLimit: number }>(
    'GET',
    `/services/${sid}/keys`,
  );
  show(
    'API keys',
    issued &&
      h(
        'div',
        { class: 'secret', role: 'alert' },
        h('p', {}, h('strong', {}, 'New API key: copy it now. It is shown once and never again.')),
        h(
          'div',
          { class: 'row' },
          h('code', { id: 'new-api-key' }, issued.apiKey),
          copyButton(issued.apiKey, 'Copy key'),
        ),
      ),
    h(
      'p',
      {},
      action('Issue a key', async () => {
        const key = await api<{ apiKey: string; keyId: string }>('POST', `/services/${sid}/keys`);
        await keysPage(sid, key);
      }),
      ' ',
      h(
        'span',
        { class: 'muted', id: 'key-count' },
        `${activeKeys} active of at most ${keyLimit}: each key has its own requests-per-minute limit; an operator sets how many keys.`,
      ),
    ),
    table(
      ['Key id', 'Created', 'Last used (minute)', 'Status', ''],
      keys.map((k) => [
        h('code', {}, String(k.keyId)),
        when(k.createdAt),
        when(k.lastUsedAt),
        k.revokedAt ? h('span', {}, badge('revoked'), ' ', when(k.revokedAt)) : badge('active'),
        k.revokedAt
          ? ''
          : action(
              'Revoke',
              async () => {
                if (
                  !confirm(
                    `Revoke key ${String(k.keyId)}? Requests with it are refused from the next one on.`,
                  )
                )
                  return;
                await api('POST', `/services/${sid}/keys/${String(k.keyId)}/revoke`);
                await keysPage(sid);
                return `Key ${String(k.keyId)} revoked.`;
              },
              'danger',
            ),
      ]),
      'No API keys.',
    ),
  );
}
