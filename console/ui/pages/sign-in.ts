import { jsonOf, request, statusMessage, TOKEN_KEY } from '../api';
import { cognitoSignIn } from '../auth';
import { formError, h, show, submitted } from '../dom';
import { clearNav } from '../nav';
import { session } from '../session';

/** The sign-in page: Cognito's hosted sign-in, or on the local stack a form that names the user. */
export function signInPage(onSignedIn: () => Promise<void>): void {
  clearNav();
  if (session.config.mode === 'cognito') {
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
  const status = formError('sign-in-error', [email]);
  const form = h(
    'form',
    {
      onsubmit: submitted(status, async () => {
        const response = await request('/console/local/sign-in', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: email.value, operator: operator.checked }),
          credentials: 'omit',
        });
        const data = jsonOf(await response.text(), response.headers.get('content-type')) as
          { token?: string; message?: string } | undefined;
        if (!data?.token) {
          throw new Error(
            data?.message ?? (response.ok ? 'Sign-in failed.' : statusMessage(response.status)),
          );
        }
        sessionStorage.setItem(TOKEN_KEY, data.token);
        await onSignedIn();
      }),
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
