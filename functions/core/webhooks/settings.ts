export interface WebhookSettings {
  /** Multiplies every retry delay; 1 on AWS, e.g. 0.001 on a local stack to see the whole schedule in minutes. */
  backoffScale: number;
  /** Time allowed for one POST, from connecting to the response status. */
  timeoutMs: number;
  /** http:// and private targets (the local stack only). */
  allowPrivateTargets: boolean;
}

const DEFAULT_WEBHOOK_SETTINGS: Readonly<WebhookSettings> = Object.freeze({
  backoffScale: 1,
  timeoutMs: 5000,
  allowPrivateTargets: false,
});

const WEBHOOK_SETTING_ENV = Object.freeze({
  backoffScale: 'OTP_WEBHOOK_BACKOFF_SCALE',
  timeoutMs: 'OTP_WEBHOOK_TIMEOUT_MS',
  allowPrivateTargets: 'OTP_WEBHOOK_ALLOW_PRIVATE',
});

export function webhookSettingsFromEnv(env: Readonly<Record<string, string | undefined>>): WebhookSettings {
  const settings = { ...DEFAULT_WEBHOOK_SETTINGS };
  const scale = env[WEBHOOK_SETTING_ENV.backoffScale];
  if (scale !== undefined && scale !== '') {
    const value = Number(scale);
    if (!Number.isFinite(value) || value <= 0 || value > 1) {
      throw new Error(`${WEBHOOK_SETTING_ENV.backoffScale} must be a number in (0, 1], got "${scale}"`);
    }
    settings.backoffScale = value;
  }
  const timeout = env[WEBHOOK_SETTING_ENV.timeoutMs];
  if (timeout !== undefined && timeout !== '') {
    const value = Number(timeout);
    if (!Number.isInteger(value) || value < 100 || value > 30_000) {
      throw new Error(
        `${WEBHOOK_SETTING_ENV.timeoutMs} must be a whole number in [100, 30000], got "${timeout}"`,
      );
    }
    settings.timeoutMs = value;
  }
  const allowPrivate = env[WEBHOOK_SETTING_ENV.allowPrivateTargets];
  if (allowPrivate !== undefined && allowPrivate !== '') {
    if (allowPrivate !== 'true' && allowPrivate !== 'false') {
      throw new Error(
        `${WEBHOOK_SETTING_ENV.allowPrivateTargets} must be true or false, got "${allowPrivate}"`,
      );
    }
    settings.allowPrivateTargets = allowPrivate === 'true';
  }
  return settings;
}
