/**
 * Structured JSON logs, one line per event. Callers pass only fields that are safe to keep: never a code,
 * an API key or a message body (the tests scan captured logs for them); fields with those names are dropped
 * anyway (`REDACTED_FIELDS`). On Lambda the lines are written by Powertools Logger (`lambdaLogger`: request id,
 * cold start, level from `POWERTOOLS_LOG_LEVEL` or `LOG_LEVEL`, errors with their stack, mapped to the TypeScript
 * sources when the bundle's source map is beside it: adapters/stack-map.ts); the local stack and
 * the tests use `jsonLogger`, whose sink records the lines.
 */
import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { mapStack } from './stack-map';

type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/**
 * Names every line already has: ours (`level`, `msg`, `time`) and Powertools' reserved keys, which it drops with
 * a warning. A field of that name would overwrite the line's level locally and vanish on Lambda.
 */
type ReservedFieldName = 'level' | 'msg' | 'time' | 'message' | 'timestamp' | 'service' | 'sampling_rate';
/** An `Error` field is logged as its name, message and stack only (never its other properties). */
export type LogFields = Record<string, string | number | boolean | null | undefined | Error> & {
  [name in ReservedFieldName]?: never;
};

export interface Logger {
  log(level: LogLevel, msg: string, fields?: LogFields): void;
}

export type LogSink = (line: string) => void;

/** Field names never logged, whatever a caller passes: the code, API keys, request and message bodies. */
const REDACTED_FIELDS: ReadonlySet<string> = new Set(
  ['code', 'apiKey', 'x-api-key', 'body', 'messageBody', 'masterKey', 'secret', 'authorization'].map((name) =>
    name.toLowerCase(),
  ),
);

/** The fields as logged: redacted names dropped, errors reduced to name, message and stack. */
function safeFields(fields: LogFields): Record<string, unknown> {
  const safe: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (REDACTED_FIELDS.has(name.toLowerCase()) || value === undefined) continue;
    safe[name] =
      value instanceof Error
        ? { name: value.name, message: value.message, stack: mapStack(value.stack) }
        : value;
  }
  return safe;
}

export function jsonLogger(
  sink: LogSink = (line) => process.stdout.write(`${line}\n`),
  base: LogFields = {},
): Logger {
  return {
    log(level, msg, fields = {}) {
      sink(
        JSON.stringify({ level, msg, time: new Date().toISOString(), ...safeFields({ ...base, ...fields }) }),
      );
    },
  };
}

/** The Lambda logger: `Logger` on Powertools, with the invocation's context added by the entry. */
export interface LambdaLogger extends Logger {
  /** Request id, function name and the cold-start flag of this invocation on every following line. */
  addContext(context: Context): void;
}

export function powertoolsLogger(options: { serviceName?: string } = {}): LambdaLogger {
  // Service name from POWERTOOLS_SERVICE_NAME (the stack sets it), level from POWERTOOLS_LOG_LEVEL or LOG_LEVEL.
  const logger = new PowertoolsLogger(
    options.serviceName !== undefined ? { serviceName: options.serviceName } : {},
  );
  return {
    log(level, msg, fields = {}) {
      // Errors as Error objects, so Powertools prints their stack; no other property of theirs is kept.
      const extra: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(safeFields(fields))) {
        extra[name] = fields[name] instanceof Error ? sanitizedError(fields[name]) : value;
      }
      logger[level](msg, extra);
    },
    addContext: (context) => logger.addContext(context),
  };
}

function sanitizedError(error: Error): Error {
  const copy = new Error(error.message);
  copy.name = error.name;
  copy.stack = mapStack(error.stack);
  return copy;
}

let lambda: LambdaLogger | undefined;

/** One Powertools logger per Lambda container, shared by its entry (which adds the context) and its deps. */
export function lambdaLogger(): LambdaLogger {
  lambda ??= powertoolsLogger();
  return lambda;
}

export const silentLogger: Logger = { log: () => undefined };
