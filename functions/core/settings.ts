/** Every limit and duration of the service (docs/configuration.md). Tests and the local stack shorten them. */
export interface Settings {
  codeTtlSeconds: number;
  maxCheckAttempts: number;
  burstLimit: number;
  burstWindowSeconds: number;
  hourlyLimit: number;
  hourlyWindowSeconds: number;
  keyRequestsPerMinute: number;
  /** Console API requests per signed-in user (the token's subject) per minute. */
  consoleRequestsPerMinute: number;
  channelWaitSeconds: number;
  unreachableDays: number;
}

export const DEFAULT_SETTINGS: Readonly<Settings> = Object.freeze({
  codeTtlSeconds: 300,
  maxCheckAttempts: 5,
  burstLimit: 3,
  burstWindowSeconds: 300,
  hourlyLimit: 10,
  hourlyWindowSeconds: 3600,
  keyRequestsPerMinute: 120,
  // A page load makes one to three requests (the operator's list of services one more per service), and the
  // console API's route takes 20 a second from everyone: 2 a second at most is a tenth of it.
  consoleRequestsPerMinute: 120,
  channelWaitSeconds: 8,
  unreachableDays: 30,
});

/** Environment variable for each setting. */
export const SETTING_ENV: Readonly<Record<keyof Settings, string>> = Object.freeze({
  codeTtlSeconds: 'OTP_CODE_TTL_SECONDS',
  maxCheckAttempts: 'OTP_MAX_CHECK_ATTEMPTS',
  burstLimit: 'OTP_BURST_LIMIT',
  burstWindowSeconds: 'OTP_BURST_WINDOW_SECONDS',
  hourlyLimit: 'OTP_HOURLY_LIMIT',
  hourlyWindowSeconds: 'OTP_HOURLY_WINDOW_SECONDS',
  keyRequestsPerMinute: 'OTP_KEY_REQUESTS_PER_MINUTE',
  consoleRequestsPerMinute: 'OTP_CONSOLE_REQUESTS_PER_MINUTE',
  channelWaitSeconds: 'OTP_CHANNEL_WAIT_SECONDS',
  unreachableDays: 'OTP_UNREACHABLE_DAYS',
});

/** Reads the settings from an environment, failing fast on anything that is not a whole number. */
export function settingsFromEnv(env: Readonly<Record<string, string | undefined>>): Settings {
  const settings = { ...DEFAULT_SETTINGS };
  for (const [name, variable] of Object.entries(SETTING_ENV) as [keyof Settings, string][]) {
    const raw = env[variable];
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    // The channel wait may be 0 in tests; every other setting must be at least 1.
    const min = name === 'channelWaitSeconds' ? 0 : 1;
    if (!Number.isInteger(value) || value < min) {
      throw new Error(`${variable} must be a whole number >= ${min}, got "${raw}"`);
    }
    settings[name] = value;
  }
  return settings;
}
