/** The webhooks page: endpoints (the signing secret shown once), rotation, and the recent deliveries. */
import { api, type Json } from '../api';
import { action, badge, copyButton, formError, h, show, submitted, table, when } from '../dom';

export async function webhooksPage(
  sid: string,
  secret?: { endpointSid: string; secret: string },
): Promise<void> {
  const data = await api<{ endpoints: Json[]; max: number; deliveries: Json[] }>(
    'GET',
    `/services/${sid}/webhooks`,
  );
  const url = h('input', {
    id: 'webhook-url',
    type: 'url',
    placeholder: 'https://hooks.example.com/otp',
    required: true,
  }) as HTMLInputElement;
  const err = formError('webhook-error', [url]);
  show(
    'Webhooks',
    secret &&
      h(
        'div',
        { class: 'secret', role: 'alert' },
        h(
          'p',
          {},
          h('strong', {}, `Signing secret of ${secret.endpointSid}: copy it now, it is shown once.`),
        ),
        h(
          'div',
          { class: 'row' },
          h('code', { id: 'webhook-secret' }, secret.secret),
          copyButton(secret.secret),
        ),
      ),
    table(
      ['Endpoint', 'URL', 'Status', 'Created', ''],
      data.endpoints.map((e) => {
        const wh = String(e.endpointSid);
        return [
          h('code', {}, wh),
          String(e.url),
          badge(e.enabled ? 'active' : 'disabled'),
          when(e.createdAt),
          h(
            'span',
            { class: 'row' },
            action(
              'Rotate secret',
              async () => webhooksPage(sid, await api('POST', `/services/${sid}/webhooks/${wh}/rotate`, {})),
              'secondary',
            ),
            action(
              e.enabled ? 'Disable' : 'Enable',
              async () => {
                await api('POST', `/services/${sid}/webhooks/${wh}/${e.enabled ? 'disable' : 'enable'}`);
                await webhooksPage(sid);
                return `Endpoint ${wh} ${e.enabled ? 'disabled' : 'enabled'}.`;
              },
              e.enabled ? 'danger' : 'secondary',
            ),
          ),
        ];
      }),
      'No webhook endpoints.',
    ),
    h('h2', {}, `Add an endpoint (at most ${data.max})`),
    h(
      'form',
      {
        class: 'row card',
        onsubmit: submitted(err, async () => {
          const added = await api<{ endpointSid: string; secret: string }>(
            'POST',
            `/services/${sid}/webhooks`,
            { url: url.value },
          );
          await webhooksPage(sid, added);
        }),
      },
      h('label', { for: 'webhook-url' }, 'URL'),
      url,
      h('button', { type: 'submit' }, 'Add endpoint'),
    ),
    err,
    h('h2', {}, 'Recent deliveries'),
    h(
      'p',
      { class: 'muted' },
      'Every attempt, newest first (the latest 50, kept 7 days). A delivery that gave up waits in the dead-letter queue.',
    ),
    h(
      'div',
      { id: 'webhook-deliveries' },
      table(
        ['Time', 'Event', 'Verification', 'Endpoint', 'Attempt', 'Answer', 'Outcome'],
        data.deliveries.map((d) => [
          when(d.at),
          String(d.eventType),
          d.verificationSid
            ? h(
                'a',
                { href: `#/s/${sid}/verification/${String(d.verificationSid)}` },
                h('code', {}, String(d.verificationSid)),
              )
            : '—',
          h('code', {}, String(d.endpointSid)),
          String(d.attempt),
          `${d.status !== null ? `HTTP ${String(d.status)}` : String(d.error)} in ${String(d.durationMs)} ms`,
          h(
            'span',
            {},
            badge(d.delivered ? 'DELIVERED' : 'FAILED'),
            d.delivered ? '' : d.final ? ' gave up' : ' will retry',
          ),
        ]),
        'No deliveries in the last 7 days.',
      ),
    ),
  );
}
