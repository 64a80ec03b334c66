/**
 * The Lambda logger (Powertools Logger behind the `Logger` seam): request id and cold start from the context,
 * errors with their stack and nothing else of theirs, and the redacted field names dropped. The JSON logger of
 * the local stack and tests drops the same names.
 */
import type { Context } from 'aws-lambda';
import { jsonLogger, powertoolsLogger } from '../../functions/adapters/logger';
import { reportBlockStarted } from '../../functions/adapters/guard/stream';

function captured(run: () => void): Record<string, unknown>[] {
  const written: string[] = [];
  // Powertools writes warnings and errors to stderr, the rest to stdout (Lambda sends both to the log group).
  const spies = [process.stdout, process.stderr].map((stream) =>
    jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    }),
  );
  try {
    run();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return written
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const context = {
  awsRequestId: 'req-1234',
  functionName: 'otp-check',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:otp-check',
  memoryLimitInMB: '256',
} as unknown as Context;

describe('powertoolsLogger', () => {
  it('writes the request id, the cold-start flag, the service and the fields', () => {
    const logger = powertoolsLogger({ serviceName: 'otp-test' });
    logger.addContext(context);
    const [line] = captured(() => logger.log('info', 'request', { route: 'POST /x', status: 201 }));
    expect(line).toMatchObject({
      level: 'INFO',
      message: 'request',
      service: 'otp-test',
      function_request_id: 'req-1234',
      cold_start: expect.any(Boolean),
      route: 'POST /x',
      status: 201,
    });
  });

  it('logs an error with its stack, and none of its other properties', () => {
    const logger = powertoolsLogger({ serviceName: 'otp-test' });
    const error = Object.assign(new Error('boom'), { $response: { body: 'Code=123456' } });
    const [line] = captured(() => logger.log('error', 'request.failed', { error }));
    const logged = line?.error as Record<string, unknown>;
    expect(logged).toMatchObject({ name: 'Error', message: 'boom' });
    expect(String(logged.stack)).toContain('logger.test.ts');
    expect(JSON.stringify(line)).not.toContain('123456');
  });

  it('drops fields named like a code, a key or a body', () => {
    const logger = powertoolsLogger({ serviceName: 'otp-test' });
    const [line] = captured(() =>
      logger.log('warn', 'x', {
        code: '123456',
        apiKey: 'otpk_secret',
        body: 'Your code is 123456',
        sid: 'VE1',
      }),
    );
    expect(line).toMatchObject({ sid: 'VE1' });
    expect(JSON.stringify(line)).not.toMatch(/123456|otpk_secret/);
  });
});

describe('jsonLogger', () => {
  it('drops the same fields, and writes an error as name, message and stack', () => {
    const lines: string[] = [];
    jsonLogger((line) => lines.push(line)).log('error', 'x', {
      code: '123456',
      error: new Error('boom'),
    });
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line.code).toBeUndefined();
    expect(line.error).toMatchObject({ name: 'Error', message: 'boom', stack: expect.any(String) });
  });
});

describe("the guard's block line", () => {
  const block = {
    prefix: '+3361234',
    reason: 'sequential_numbers' as const,
    level: 'standard' as const,
    since: 0,
    until: 60_000,
    figures: { run: 12 },
  };

  it('stays a warning and names the guard level, locally', () => {
    const lines: string[] = [];
    reportBlockStarted(jsonLogger((line) => lines.push(line)))('VA1', 'FR', block);
    expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual([
      expect.objectContaining({ level: 'warn', msg: 'guard.block_started', guardLevel: 'standard' }),
    ]);
  });

  it('stays one warning and names the guard level, on Lambda', () => {
    const lines = captured(() =>
      reportBlockStarted(powertoolsLogger({ serviceName: 'otp-test' }))('VA1', 'FR', block),
    );
    expect(lines).toEqual([
      expect.objectContaining({ level: 'WARN', message: 'guard.block_started', guardLevel: 'standard' }),
    ]);
  });
});
