/** The environment of a Lambda function (or of the local stack), read once at cold start, failing fast. */
import { CHANNELS, isChannel, type Channel } from '../core/routing';

export type Env = Readonly<Record<string, string | undefined>>;

export function required(env: Env, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`Missing environment variable ${name}`);
  return value;
}

/** `OTP_ALLOWED_CHANNELS`: a comma list of channels; unset means all five. */
export function allowedChannelsFromEnv(env: Env): Channel[] {
  const raw = env.OTP_ALLOWED_CHANNELS;
  if (!raw) return [...CHANNELS];
  const channels = raw.split(',').map((name) => name.trim());
  const unknown = channels.filter((name) => !isChannel(name));
  if (unknown.length > 0) throw new Error(`OTP_ALLOWED_CHANNELS has unknown channels: ${unknown.join(', ')}`);
  return channels as Channel[];
}
