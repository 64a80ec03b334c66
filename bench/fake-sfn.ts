/**
 * A Step Functions endpoint on loopback for the cold starts (bench/bundles.ts): it answers `StartExecution` as
 * AWS does (awsJson1_0, `executionArn` and `startDate`), so a cold send makes the real SDK call it makes on
 * Lambda (client set-up, signing with the environment's credentials, one HTTP request) before it answers.
 * Without it the send's workflow had no ARN, its start failed without a request, and an error line was logged
 * instead: cheaper than on AWS, and not what a deployed send does.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeStepFunctions {
  endpoint: string;
  /** The environment a function needs to start executions on it (region and credentials as Lambda sets them). */
  env: Record<string, string>;
  /** `StartExecution` requests answered so far. */
  starts(): number;
  close(): Promise<void>;
}

export const BENCH_STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:bench-delivery';

export async function startFakeStepFunctions(): Promise<FakeStepFunctions> {
  let starts = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '');
      if (target !== 'AWSStepFunctions.StartExecution') {
        response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify({ __type: 'UnknownOperationException', message: target }));
        return;
      }
      starts++;
      const { name } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { name?: string };
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      response.end(
        JSON.stringify({
          executionArn: `${BENCH_STATE_MACHINE_ARN.replace(':stateMachine:', ':execution:')}:${name ?? 'x'}`,
          startDate: Date.now() / 1000,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    env: {
      STATE_MACHINE_ARN: BENCH_STATE_MACHINE_ARN,
      // The SDK's per-service endpoint variable: the function's code is the deployed one, only the host differs.
      AWS_ENDPOINT_URL_SFN: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'bench',
      AWS_SECRET_ACCESS_KEY: 'bench',
    },
    starts: () => starts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
