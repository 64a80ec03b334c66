/** Who is signed in, and how this deployment signs in (config.json). */
import { api } from './api';

export interface Config {
  mode: 'local' | 'cognito';
  authUrl?: string;
  clientId?: string;
}
export interface Me {
  user: { id: string; name: string; operator: boolean };
  services: { sid: string; name: string }[];
}

export const session: { me: Me | undefined; config: Config } = { me: undefined, config: { mode: 'local' } };

export async function loadMe(): Promise<Me> {
  const me = await api<Me>('GET', '/me');
  session.me = me;
  const who = document.getElementById('who')!;
  who.textContent = `${me.user.name}${me.user.operator ? ' (operator)' : ''}`;
  document.getElementById('sign-out')!.hidden = false;
  return me;
}
