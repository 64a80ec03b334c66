/**
 * The console page's start-up and routing: plain TypeScript and the DOM, bundled by esbuild
 * (lib/console-assets.ts). The helpers are in dom.ts (every text goes in as `textContent`), the API client in
 * api.ts, the sign-in in auth.ts and session.ts, and each page in pages/.
 */
import { navigated, renewWith, request, TOKEN_KEY, whenSignedOut } from './api';
import { cognitoSignOut, finishCognitoSignIn, forgetTokens, renewSession } from './auth';
import { announce, h, show, showError } from './dom';
import { renderNav } from './nav';
import { activityPage } from './pages/activity';
import { chargesPage } from './pages/charges';
import { conversionPage } from './pages/conversion';
import { keysPage } from './pages/keys';
import { operatorPage } from './pages/operator';
import { guardPage } from './pages/guard';
import { rulesPage } from './pages/rules';
import { settingsPage } from './pages/settings';
import { signInPage } from './pages/sign-in';
import { templatesPage } from './pages/templates';
import { verificationPage, verificationsPage } from './pages/verifications';
import { webhooksPage } from './pages/webhooks';
import { loadMe, session, type Config } from './session';

async function route(): Promise<void> {
  // Every way to a page comes here (a link, the picker, back and forward, sign-in and out, Try again): the
  // requests of the page before it are left unanswered.
  navigated();
  announce();
  if (!sessionStorage.getItem(TOKEN_KEY)) return signInPage(route);
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  try {
    const me = session.me ?? (await loadMe());
    // An operator lands on every service's list; a member on their first service.
    if (me.user.operator && parts[0] !== 's') {
      renderNav(undefined, 'operator');
      return await operatorPage();
    }
    const sid = parts[0] === 's' && parts[1] ? parts[1] : me.services[0]?.sid;
    const page = parts[0] === 's' ? (parts[2] ?? 'settings') : 'settings';
    if (!sid) {
      renderNav(undefined, '');
      if (me.user.operator) return await operatorPage();
      return show(
        'No service yet',
        h('p', {}, 'You are not a member of any service yet: ask your operator to add you.'),
      );
    }
    const pages: Record<string, () => Promise<void>> = {
      settings: () => settingsPage(sid),
      keys: () => keysPage(sid),
      charges: () => chargesPage(sid),
      verifications: () => verificationsPage(sid),
      verification: () => verificationPage(sid, parts[3] ?? ''),
      conversion: () => conversionPage(sid),
      templates: () => templatesPage(sid),
      rules: () => rulesPage(sid),
      guard: () => guardPage(sid),
      webhooks: () => webhooksPage(sid),
      activity: () => activityPage(sid),
    };
    // A page name the console does not know shows Settings, marked as such in the navigation.
    const shown = page in pages ? page : 'settings';
    renderNav(sid, shown === 'verification' ? 'verifications' : shown);
    await pages[shown]!();
  } catch (error) {
    showError(error, { retry: route, back: wayBack(parts[0] === 's' ? parts[1] : undefined) });
  }
}

/** Where the error page leads: All services for an operator, else the service's settings (one of the user's). */
function wayBack(sid: string | undefined): { href: string; label: string } | undefined {
  const me = session.me;
  if (!me) return undefined;
  if (me.user.operator) return { href: '#/operator', label: 'All services' };
  const service = me.services.find((s) => s.sid === sid) ?? me.services[0];
  return service && { href: `#/s/${service.sid}/settings`, label: `Settings of ${service.name}` };
}

whenSignedOut(() => {
  // The session is over (its renewal refused, or the API refused the renewed token): the sign-in page, at the
  // page's own address, which the hosted sign-in brings the user back to.
  forgetTokens();
  session.me = undefined;
  void route();
});

document.getElementById('sign-out')!.addEventListener('click', () => {
  const refreshToken = forgetTokens();
  session.me = undefined;
  document.getElementById('who')!.textContent = '';
  document.getElementById('sign-out')!.hidden = true;
  location.hash = '';
  if (session.config.mode === 'cognito') return void cognitoSignOut(refreshToken);
  void route();
});
window.addEventListener('hashchange', () => void route());

async function start(): Promise<void> {
  try {
    session.config = (await (
      await request('/console/config.json', { credentials: 'omit' })
    ).json()) as Config;
    if (session.config.mode === 'cognito') {
      renewWith(renewSession);
      await finishCognitoSignIn();
    }
  } catch (error) {
    showError(error, { retry: start });
    return;
  }
  await route();
}

void start();
