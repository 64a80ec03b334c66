/** The environment of a Lambda function (or of the local stack), read once at cold start, failing fast. */
import { CHANNELS, parseChannelList, type Channel } from '../core/routing';

export type Env = Readonly<Record<string, string | undefined>>;

export function required(env: Env, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`Missing environment variable ${name}`);
  return value;
}

/** `OTP_ALLOWED_CHANNELS`: a comma list of channels (see parseChannelList); unset means all five. */
export function allowedChannelsFromEnv(env: Env): Channel[] {
  const raw = env.OTP_ALLOWED_CHANNELS;
  if (!raw) return [...CHANNELS];
  const { channels, unknown } = parseChannelList(raw);
  if (unknown.length > 0) throw new Error(`OTP_ALLOWED_CHANNELS has unknown channels: ${unknown.join(', ')}`);
  if (channels.length === 0) throw new Error(`OTP_ALLOWED_CHANNELS lists no channel: "${raw}"`);
  return channels;
}
