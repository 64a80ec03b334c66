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

/**
 * `OTP_LEGACY_API_KEYS_UNTIL`: an ISO 8601 date or instant from which legacy-format API keys (no tag) are refused;
 * unset: they keep working. The operator's cut-off once every client holds a tagged key (docs/admin.md).
 */
export function legacyApiKeysUntilFromEnv(env: Env): Date | undefined {
  const raw = env.OTP_LEGACY_API_KEYS_UNTIL;
  if (!raw) return undefined;
  const until = new Date(raw);
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw) || Number.isNaN(until.getTime())) {
    throw new Error(`OTP_LEGACY_API_KEYS_UNTIL must be an ISO 8601 date such as 2026-06-30, got "${raw}"`);
  }
  return until;
}
