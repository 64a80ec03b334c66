/**
 * The console page: plain TypeScript and the DOM, bundled by esbuild (lib/console-assets.ts). Every text a user or
 * the table supplied goes in through `textContent` (the `h` helper below), never as HTML. The sign-in token is
 * kept in sessionStorage (this tab only) and sent as `Authorization: Bearer`; no cookie is ever set.
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | boolean | ((event: Event) => void) | undefined>;

/** An element with attributes, listeners and children; strings become text nodes. */
function h(tag: string, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  return el;
}

interface Config {
  mode: 'local' | 'cognito';
  authUrl?: string;
  clientId?: string;
}
interface Me {
  user: { id: string; name: string; operator: boolean };
  services: { sid: string; name: string }[];
}
type Json = Record<string, unknown>;

const TOKEN_KEY = 'otp-console-token';
const app = document.getElementById('app')!;
const nav = document.getElementById('nav')!;
let me: Me | undefined;
let config: Config = { mode: 'local' };

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function api<T = Json>(method: string, path: string, body?: unknown): Promise<T> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const response = await fetch(`/console/api${path}`, {
    method,
    headers: {
      ...(token && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
    credentials: 'omit',
  });
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    me = undefined;
    void route();
    throw new HttpError(401, 'Signed out: sign in again.');
  }
  const text = await response.text();
  const data = (
    text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text
  ) as T;
  if (!response.ok) {
    const message = (data as Json)?.message;
    throw new HttpError(response.status, typeof message === 'string' ? message : `HTTP ${response.status}`);
  }
  return data;
}

// --- sign-in ------------------------------------------------------------------------------------------------

function base64url(bytes: ArrayBuffer | Uint8Array): string {
  let text = '';
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const redirectUri = () => `${location.origin}/console`;

/** Cognito's hosted sign-in, authorization code with PKCE (a public client: no secret in the page). */
async function cognitoSignIn(): Promise<void> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem('otp-console-pkce', JSON.stringify({ verifier, state }));
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const url = new URL('/oauth2/authorize', config.authUrl);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: config.clientId!,
    redirect_uri: redirectUri(),
    scope: 'openid email',
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

/** Back from the hosted sign-in: trade the code for tokens; the ID token is what the API's authorizer takes. */
async function finishCognitoSignIn(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  if (!code) return;
  const saved = JSON.parse(sessionStorage.getItem('otp-console-pkce') ?? '{}') as {
    verifier?: string;
    state?: string;
  };
  sessionStorage.removeItem('otp-console-pkce');
  history.replaceState(null, '', `/console${location.hash}`);
  if (!saved.verifier || saved.state !== params.get('state'))
    throw new Error('The sign-in answer does not match.');
  const response = await fetch(new URL('/oauth2/token', config.authUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: config.clientId!,
      code,
      redirect_uri: redirectUri(),
      code_verifier: saved.verifier,
    }),
  });
  if (!response.ok) throw new Error('Signing in failed.');
  const tokens = (await response.json()) as { id_token?: string };
  if (tokens.id_token) sessionStorage.setItem(TOKEN_KEY, tokens.id_token);
}

function signInPage(): void {
  nav.replaceChildren();
  if (config.mode === 'cognito') {
    show(
      'Sign in',
      h('p', {}, 'Sign in with your console account.'),
      h('button', { onclick: () => void cognitoSignIn() }, 'Sign in'),
    );
    return;
  }
  const email = h('input', {
    id: 'email',
    type: 'email',
    required: true,
    autocomplete: 'username',
    value: 'demo@example.com',
  }) as HTMLInputElement;
  const operator = h('input', { id: 'operator', type: 'checkbox' }) as HTMLInputElement;
  const status = h('p', { role: 'status' });
  const form = h(
    'form',
    {
      onsubmit: (event) => {
        event.preventDefault();
        void (async () => {
          const response = await fetch('/console/local/sign-in', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ email: email.value, operator: operator.checked }),
            credentials: 'omit',
          });
          const data = (await response.json()) as { token?: string; message?: string };
          if (!response.ok || !data.token) {
            status.textContent = data.message ?? 'Sign-in failed';
            status.className = 'error';
            return;
          }
          sessionStorage.setItem(TOKEN_KEY, data.token);
          await route();
        })();
      },
    },
    h('label', { for: 'email' }, 'E-mail (your user id on this local stack)'),
    email,
    h(
      'div',
      { class: 'row' },
      operator,
      h('label', { for: 'operator' }, 'Sign in as an operator (sees every service)'),
    ),
    h('p', {}, h('button', { type: 'submit' }, 'Sign in')),
    status,
  );
  show(
    'Local sign-in',
    h(
      'p',
      { class: 'muted' },
      'Local stack only: this sign-in answers on the loopback address and nowhere else.',
    ),
    h('div', { class: 'card' }, form),
  );
}

// --- layout -------------------------------------------------------------------------------------------------

function show(title: string, ...content: Child[]): void {
  document.title = `${title} · OTP console`;
  app.replaceChildren(
    h('h1', {}, title),
    ...content
      .filter((c): c is Node | string => !!c || c === 0)
      .map((c) => (typeof c === 'object' ? c : String(c))),
  );
  app.focus();
}

const SERVICE_PAGES: [string, string][] = [
  ['settings', 'Settings'],
  ['keys', 'API keys'],
  ['charges', 'Balance and charges'],
  ['verifications', 'Verifications'],
  ['conversion', 'Conversion'],
  ['templates', 'Templates'],
  ['rules', 'Delivery rules'],
  ['webhooks', 'Webhooks'],
];

function renderNav(sid: string | undefined, page: string): void {
  const items: Child[] = [];
  if (me && me.services.length > 0) {
    const select = h(
      'select',
      {
        'aria-label': 'Service',
        id: 'service-select',
        onchange: (event) => {
          location.hash = `#/s/${(event.target as HTMLSelectElement).value}/${page === 'operator' ? 'settings' : page}`;
        },
      },
      me.services.map((s) =>
        h('option', { value: s.sid, selected: s.sid === sid }, `${s.name} (${s.sid.slice(0, 8)}…)`),
      ),
    );
    items.push(h('h2', {}, 'Service'), select);
    const current = sid ?? me.services[0]!.sid;
    for (const [id, label] of SERVICE_PAGES) {
      items.push(
        h(
          'a',
          { href: `#/s/${current}/${id}`, 'aria-current': sid && page === id ? 'page' : undefined },
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

function copyButton(text: string, label = 'Copy'): HTMLElement {
  const button = h('button', { type: 'button', class: 'secondary' }, label);
  button.addEventListener('click', () => {
    void navigator.clipboard.writeText(text).then(
      () => {
        button.textContent = 'Copied';
        setTimeout(() => (button.textContent = label), 1500);
      },
      () => (button.textContent = 'Copy failed'),
    );
  });
  return button;
}

function table(headers: string[], rows: Child[][], empty = 'Nothing yet.'): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, empty);
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((x) => h('th', { scope: 'col' }, x)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((row) =>
        h(
          'tr',
          {},
          row.map((cell) => h('td', {}, cell)),
        ),
      ),
    ),
  );
}

const badge = (text: string) => h('span', { class: `badge ${text}` }, text);
const when = (iso: unknown) =>
  typeof iso === 'string' ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—';

/** Runs an action from a button, showing its error beside the button. */
function action(label: string, run: () => Promise<void>, cls = ''): HTMLElement {
  const out = h('span', { role: 'status', class: 'error' });
  const button = h('button', { type: 'button', class: cls }, label) as HTMLButtonElement;
  button.addEventListener('click', () => {
    button.disabled = true;
    out.textContent = '';
    run()
      .catch((error: unknown) => (out.textContent = error instanceof Error ? error.message : String(error)))
      .finally(() => (button.disabled = false));
  });
  return h('span', {}, button, ' ', out);
}

function formError(): HTMLElement {
  return h('p', { role: 'status', class: 'error' });
}

// --- pages ------------------------------------------------------------------------------------------------

async function settingsPage(sid: string): Promise<void> {
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
  const err = formError();
  const riskCheck = h('input', {
    type: 'checkbox',
    id: 'risk-check-opt-out',
    checked: s.riskCheckOptOut === true,
  }) as HTMLInputElement;
  const template = s.defaultTemplate as Json | null;
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
        action('Save channels', async () => {
          await api('PUT', `/services/${sid}/channels`, {
            channels: boxes.filter((b) => b.box.checked).map((b) => b.c),
          });
          await settingsPage(sid);
        }),
      ),
      err,
    ),
    h('h2', {}, 'Pumping guard'),
    h(
      'div',
      { class: 'card' },
      h(
        'div',
        { class: 'row' },
        riskCheck,
        h(
          'label',
          { for: 'risk-check-opt-out', class: 'inline' },
          "Let a send's RiskCheck=disable skip the guard (off: every send is judged, and the answer is the same)",
        ),
      ),
      h(
        'p',
        {},
        action('Save guard setting', async () => {
          await api('PUT', `/services/${sid}/guard`, { riskCheckOptOut: riskCheck.checked });
          await settingsPage(sid);
        }),
      ),
    ),
  );
}

async function keysPage(sid: string, issued?: { apiKey: string; keyId: string }): Promise<void> {
  const { keys } = await api<{ keys: Json[] }>('GET', `/services/${sid}/keys`);
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
              },
              'danger',
            ),
      ]),
      'No API keys.',
    ),
  );
}

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

async function chargesPage(sid: string): Promise<void> {
  const c = await api('GET', `/services/${sid}/charges?days=30`);
  const byDay = c.byDay as { key: string; count: number; amount: string }[];
  const byCountry = c.byCountry as { key: string; count: number; amount: string }[];
  const latest = c.latest as Json[];
  const download = action('Download CSV', async () => {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const response = await fetch(`/console/api/services/${sid}/charges.csv?days=30`, {
      headers: { authorization: `Bearer ${token ?? ''}` },
      credentials: 'omit',
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
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

async function verificationsPage(sid: string, q = ''): Promise<void> {
  const data = await api<{ verifications: Json[]; searchedLatest: number | null }>(
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
  const form = h(
    'form',
    {
      class: 'row',
      role: 'search',
      onsubmit: (event) => {
        event.preventDefault();
        void verificationsPage(sid, input.value.trim()).catch(showError);
      },
    },
    input,
    h('button', { type: 'submit' }, 'Search'),
  );
  show(
    'Verifications',
    form,
    data.searchedLatest !== null &&
      h('p', { class: 'muted' }, `A number is searched among the latest ${data.searchedLatest} sends.`),
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

async function verificationPage(sid: string, ve: string): Promise<void> {
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

async function conversionPage(sid: string): Promise<void> {
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

async function templatesPage(sid: string): Promise<void> {
  const data = await api<{ templates: Json[] }>('GET', `/services/${sid}/templates`);
  const body = h('textarea', {
    id: 'template-body',
    maxlength: '1000',
    placeholder: 'Your code is {code}.',
  }) as HTMLTextAreaElement;
  const makeDefault = h('input', { id: 'template-default', type: 'checkbox' }) as HTMLInputElement;
  const err = formError();
  show(
    'Templates',
    table(
      ['SID', 'Text', 'Locale', ''],
      data.templates.map((t) => [
        h('span', { class: 'row' }, h('code', {}, String(t.sid)), copyButton(String(t.sid))),
        String(t.body),
        String(t.locale),
        t.default
          ? badge('default')
          : action(
              'Make default',
              async () => {
                await api('POST', `/services/${sid}/templates/${String(t.sid)}/default`);
                await templatesPage(sid);
              },
              'secondary',
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
        onsubmit: (event) => {
          event.preventDefault();
          void api('POST', `/services/${sid}/templates`, { body: body.value, default: makeDefault.checked })
            .then(() => templatesPage(sid))
            .catch((error: Error) => (err.textContent = error.message));
        },
      },
      h('label', { for: 'template-body' }, 'Text (must contain {code})'),
      body,
      h('div', { class: 'row' }, makeDefault, h('label', { for: 'template-default' }, 'Make it the default')),
      h('p', {}, h('button', { type: 'submit' }, 'Add template')),
      err,
    ),
  );
}

interface HighRisk {
  country: string;
  name: string;
  reason: string;
  sources: { publisher: string; title: string; url: string }[];
}

/** The country allow-list beside the blocked lists: a deny entry wins; no list is every served country. */
function allowListSection(sid: string, r: Json): HTMLElement {
  const allowed = r.allowedCountries as string[] | null;
  const served = r.servedCountries as string[];
  const highRisk = r.highRiskCountries as HighRisk[];
  const excluded = (r.excludedHighRiskCountries as HighRisk[]).map((e) => e.country);
  const err = formError();
  const saveAllowed = (next: string[] | null) =>
    api('PUT', `/services/${sid}/rules`, {
      blockedCountries: r.blockedCountries,
      blockedPrefixes: r.blockedPrefixes,
      allowedCountries: next,
    }).then(() => rulesPage(sid));
  const addable = served.filter((c) => allowed !== null && !allowed.includes(c));
  const add = h(
    'select',
    { id: 'allow-country', 'aria-label': 'Country to allow' },
    addable.map((c) => h('option', { value: c }, c)),
  ) as HTMLSelectElement;
  return h(
    'section',
    { id: 'allow-list', 'aria-label': 'Country allow-list' },
    h('h2', {}, 'Country allow-list'),
    h(
      'p',
      { class: 'muted' },
      'Sends to a served country not on the list are refused with 403 blocked_by_policy. A blocked country or prefix is refused even when listed.',
    ),
    h(
      'p',
      { id: 'allowed-countries' },
      allowed === null
        ? 'No allow-list: every served country, high-risk ones included.'
        : allowed.length === 0
          ? 'Empty: every send is refused.'
          : `Allowed: ${allowed.join(', ')}`,
    ),
    excluded.length > 0 &&
      h('p', {}, `Left out as high risk for SMS pumping: ${excluded.join(', ')} (see below).`),
    h(
      'div',
      { class: 'row card' },
      allowed !== null &&
        addable.length > 0 &&
        h(
          'span',
          { class: 'row' },
          add,
          action('Allow country', () => saveAllowed([...allowed, add.value])),
        ),
      allowed !== null &&
        allowed.length > 0 &&
        h(
          'span',
          { class: 'row' },
          (() => {
            const remove = h(
              'select',
              { id: 'disallow-country', 'aria-label': 'Country to take off' },
              allowed.map((c) => h('option', { value: c }, c)),
            ) as HTMLSelectElement;
            return h(
              'span',
              { class: 'row' },
              remove,
              action('Take off', () => saveAllowed(allowed.filter((c) => c !== remove.value)), 'secondary'),
            );
          })(),
        ),
      action('Reset to default', () => saveAllowed(r.defaultAllowedCountries as string[]), 'secondary'),
      allowed !== null && action('Allow every country', () => saveAllowed(null), 'secondary'),
    ),
    err,
    h('h3', {}, "High-risk countries (left out of a new service's list)"),
    table(
      ['Country', 'Why', 'Sources'],
      highRisk.map((e) => [
        `${e.country} ${e.name}`,
        e.reason,
        h(
          'span',
          {},
          e.sources.flatMap((source, i) => [
            i > 0 ? '; ' : '',
            h('a', { href: source.url, rel: 'noopener noreferrer', target: '_blank' }, source.publisher),
          ]),
        ),
      ]),
    ),
  );
}

const CAP_FIELDS = ['hourlySends', 'dailySends', 'hourlySpend', 'dailySpend'] as const;
const CAP_LABELS: Record<(typeof CAP_FIELDS)[number], string> = {
  hourlySends: 'Sends an hour',
  dailySends: 'Sends a day',
  hourlySpend: 'USD an hour',
  dailySpend: 'USD a day',
};

/** The owner's per-country caps, and an alert for each cap reached now. */
function capsSection(sid: string, c: Json): HTMLElement {
  const caps = c.caps as Json[];
  const reached = c.reached as Json[];
  const err = formError();
  const country = h(
    'select',
    { id: 'cap-country', 'aria-label': 'Country of the caps' },
    h('option', { value: '*' }, '* (every other country)'),
    (c.servedCountries as string[]).map((x) => h('option', { value: x }, x)),
  ) as HTMLSelectElement;
  const inputs = CAP_FIELDS.map((field) => ({
    field,
    input: h('input', {
      id: `cap-${field}`,
      size: '8',
      inputmode: 'decimal',
      placeholder: 'none',
    }) as HTMLInputElement,
  }));
  const put = (code: string, body: Json) =>
    api('PUT', `/services/${sid}/caps/${encodeURIComponent(code)}`, body).then(() => rulesPage(sid));
  return h(
    'section',
    { id: 'caps', 'aria-label': 'Caps' },
    h('h2', {}, 'Caps per country'),
    reached.map((x) =>
      h(
        'p',
        { class: 'error', role: 'alert' },
        `Cap reached: ${String(x.country)} ${String(x.cap).replace('_', ' ')} ${String(x.value)} of ${String(x.limit)}. Sends to ${String(x.country)} are refused until ${when(x.until)}.`,
      ),
    ),
    h(
      'p',
      { class: 'muted' },
      "Past a cap, the country's sends are refused with 403 blocked_by_policy until the end of the hour or day (UTC). Counted by the pumping guard a few seconds after each send; a guard.cap_reached webhook tells your endpoints once.",
    ),
    table(
      ['Country', ...CAP_FIELDS.map((f) => CAP_LABELS[f]), ''],
      caps.map((x) => [
        String(x.country),
        ...CAP_FIELDS.map((f) => (x[f] === null ? '—' : String(x[f]))),
        action('Remove', () => put(String(x.country), {}), 'secondary'),
      ]),
      'No caps.',
    ),
    h(
      'form',
      {
        class: 'row card',
        onsubmit: (event) => {
          event.preventDefault();
          const body: Json = {};
          for (const { field, input } of inputs) {
            const text = input.value.trim();
            if (text === '') continue;
            body[field] = field.endsWith('Spend') ? text : Number(text);
          }
          put(country.value, body).catch((e: Error) => (err.textContent = e.message));
        },
      },
      h('label', { for: 'cap-country' }, 'Country'),
      country,
      inputs.flatMap(({ field, input }) => [h('label', { for: `cap-${field}` }, CAP_LABELS[field]), input]),
      h('button', { type: 'submit' }, 'Set caps'),
    ),
    err,
  );
}

async function rulesPage(sid: string): Promise<void> {
  const [r, caps] = await Promise.all([
    api('GET', `/services/${sid}/rules`),
    api('GET', `/services/${sid}/caps`),
  ]);
  const countries = r.blockedCountries as string[];
  const prefixes = r.blockedPrefixes as string[];
  const save = (next: { blockedCountries: string[]; blockedPrefixes: string[] }) =>
    api('PUT', `/services/${sid}/rules`, next).then(() => rulesPage(sid));
  const country = h(
    'select',
    { id: 'country' },
    (r.servedCountries as string[]).map((c) => h('option', { value: c }, c)),
  ) as HTMLSelectElement;
  const prefix = h('input', {
    id: 'prefix',
    placeholder: '+4470',
    pattern: '\\+[1-9][0-9]{0,14}',
  }) as HTMLInputElement;
  const err = formError();
  show(
    'Delivery rules',
    h(
      'p',
      { class: 'muted' },
      'Sends to a blocked country or prefix are refused with 403 blocked_by_policy.',
    ),
    h('h2', {}, 'Blocked countries'),
    table(
      ['Country', ''],
      countries.map((c) => [
        c,
        action(
          'Unblock',
          () => save({ blockedCountries: countries.filter((x) => x !== c), blockedPrefixes: prefixes }),
          'secondary',
        ),
      ]),
      'None.',
    ),
    h(
      'form',
      {
        class: 'row card',
        onsubmit: (event) => {
          event.preventDefault();
          save({ blockedCountries: [...countries, country.value], blockedPrefixes: prefixes }).catch(
            (e: Error) => (err.textContent = e.message),
          );
        },
      },
      h('label', { for: 'country' }, 'Country'),
      country,
      h('button', { type: 'submit' }, 'Block country'),
    ),
    h('h2', {}, 'Blocked prefixes'),
    table(
      ['Prefix', ''],
      prefixes.map((p) => [
        p,
        action(
          'Unblock',
          () => save({ blockedCountries: countries, blockedPrefixes: prefixes.filter((x) => x !== p) }),
          'secondary',
        ),
      ]),
      'None.',
    ),
    h(
      'form',
      {
        class: 'row card',
        onsubmit: (event) => {
          event.preventDefault();
          save({ blockedCountries: countries, blockedPrefixes: [...prefixes, prefix.value.trim()] }).catch(
            (e: Error) => (err.textContent = e.message),
          );
        },
      },
      h('label', { for: 'prefix' }, 'E.164 prefix'),
      prefix,
      h('button', { type: 'submit' }, 'Block prefix'),
    ),
    err,
    allowListSection(sid, r),
    capsSection(sid, caps),
  );
}

async function webhooksPage(sid: string, secret?: { endpointSid: string; secret: string }): Promise<void> {
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
  const err = formError();
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
        onsubmit: (event) => {
          event.preventDefault();
          api<{ endpointSid: string; secret: string }>('POST', `/services/${sid}/webhooks`, {
            url: url.value,
          })
            .then((added) => webhooksPage(sid, added))
            .catch((e: Error) => (err.textContent = e.message));
        },
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

async function operatorPage(): Promise<void> {
  const name = h('input', { id: 'new-name', required: true, maxlength: '100' }) as HTMLInputElement;
  const balance = h('input', { id: 'new-balance', value: '0', inputmode: 'decimal' }) as HTMLInputElement;
  const err = formError();
  const rows = me!.services.map((s) => {
    const amount = h('input', {
      'aria-label': `Top-up for ${s.name}`,
      size: '6',
      inputmode: 'decimal',
      placeholder: 'USD',
    }) as HTMLInputElement;
    const balanceCell = h('span', {}, '…');
    void api('GET', `/services/${s.sid}`).then(
      (x) => (balanceCell.textContent = `${String(x.balance)} USD`),
      () => undefined,
    );
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
            const result = await api('POST', `/services/${s.sid}/topup`, { amount: amount.value.trim() });
            balanceCell.textContent = `${String(result.balance)} USD`;
            amount.value = '';
          },
          'secondary',
        ),
      ),
    ];
  });
  show(
    'All services',
    table(['Name', 'SID', 'Balance', 'Top up'], rows, 'No services yet.'),
    h('h2', {}, 'Create a service'),
    h(
      'form',
      {
        class: 'card',
        onsubmit: (event) => {
          event.preventDefault();
          api('POST', '/services', { name: name.value, balance: balance.value.trim() || '0' })
            .then(async (created) => {
              await loadMe();
              location.hash = `#/s/${String(created.sid)}/settings`;
            })
            .catch((e: Error) => (err.textContent = e.message));
        },
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

// --- routing ------------------------------------------------------------------------------------------------

async function loadMe(): Promise<void> {
  me = await api<Me>('GET', '/me');
  const who = document.getElementById('who')!;
  who.textContent = `${me.user.name}${me.user.operator ? ' (operator)' : ''}`;
  document.getElementById('sign-out')!.hidden = false;
}

function showError(error: unknown): void {
  if (error instanceof HttpError && error.status === 401) return;
  show(
    'Something went wrong',
    h('p', { class: 'error', role: 'alert' }, error instanceof Error ? error.message : String(error)),
  );
}

async function route(): Promise<void> {
  if (!sessionStorage.getItem(TOKEN_KEY)) return signInPage();
  try {
    if (!me) await loadMe();
    const parts = location.hash.replace(/^#\/?/, '').split('/');
    if (parts[0] === 'operator' && me!.user.operator) {
      renderNav(undefined, 'operator');
      return await operatorPage();
    }
    const sid = parts[0] === 's' && parts[1] ? parts[1] : me!.services[0]?.sid;
    const page = parts[0] === 's' ? (parts[2] ?? 'settings') : 'settings';
    if (!sid) {
      renderNav(undefined, '');
      if (me!.user.operator) return await operatorPage();
      return show(
        'No service yet',
        h('p', {}, 'You are not a member of any service yet: ask your operator to add you.'),
      );
    }
    renderNav(sid, page === 'verification' ? 'verifications' : page);
    const pages: Record<string, () => Promise<void>> = {
      settings: () => settingsPage(sid),
      keys: () => keysPage(sid),
      charges: () => chargesPage(sid),
      verifications: () => verificationsPage(sid),
      verification: () => verificationPage(sid, parts[3] ?? ''),
      conversion: () => conversionPage(sid),
      templates: () => templatesPage(sid),
      rules: () => rulesPage(sid),
      webhooks: () => webhooksPage(sid),
    };
    await (pages[page] ?? pages.settings!)();
  } catch (error) {
    showError(error);
  }
}

document.getElementById('sign-out')!.addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  me = undefined;
  document.getElementById('who')!.textContent = '';
  document.getElementById('sign-out')!.hidden = true;
  location.hash = '';
  if (config.mode === 'cognito') {
    // Ends the hosted sign-in's own session too, or the next "Sign in" would sign straight back in.
    const url = new URL('/logout', config.authUrl);
    url.search = new URLSearchParams({ client_id: config.clientId!, logout_uri: redirectUri() }).toString();
    location.assign(url.toString());
    return;
  }
  void route();
});
window.addEventListener('hashchange', () => void route());

void (async () => {
  try {
    config = (await (await fetch('/console/config.json', { credentials: 'omit' })).json()) as Config;
    if (config.mode === 'cognito') await finishCognitoSignIn();
  } catch (error) {
    showError(error);
    return;
  }
  await route();
})();
