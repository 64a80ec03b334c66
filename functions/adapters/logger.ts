/**
 * Structured JSON logs, one line per event. Callers pass only fields that are safe to keep: never a code,
 * an API key or a message body (the tests scan captured logs for them).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  log(level: LogLevel, msg: string, fields?: LogFields): void;
}

export type LogSink = (line: string) => void;

export function jsonLogger(
  sink: LogSink = (line) => process.stdout.write(`${line}\n`),
  base: LogFields = {},
): Logger {
  return {
    log(level, msg, fields = {}) {
      sink(JSON.stringify({ level, msg, time: new Date().toISOString(), ...base, ...fields }));
    },
  };
}

export const silentLogger: Logger = { log: () => undefined };
