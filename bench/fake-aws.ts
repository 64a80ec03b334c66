/**
 * The two AWS services other than DynamoDB that a cold function calls on Lambda, on loopback for the cold starts
 * (bench/bundles.ts), answering as AWS does (awsJson1_1 and awsJson1_0), so each cold run makes the SDK calls a
 * deployed function makes (client set-up, signing with the environment's credentials, one HTTP request each):
 * - Secrets Manager `GetSecretValue` and `BatchGetSecretValue`: a function with key groups (lib/functions.ts
 *   `keys`) reads its groups' key secrets at its first invocation, two or more in one batch
 *   (functions/wiring/keys.ts). Each secret holds the bench's master key as its
 *   root, which gives the same keys as the master key (functions/adapters/keyring.ts), so signed events still
 *   verify. Before, the cold runs were given `OTP_MASTER_KEY` and read no secret.
 * - Step Functions `StartExecution`: a send answers after starting its workflow. Before, the send had no state
 *   machine ARN, its start failed without a request and it logged an error instead.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KEY_GROUPS, KEY_GROUP_NAMES, type KeyGroup } from '../functions/adapters/keyring';

export interface FakeAws {
  endpoint: string;
  /**
   * The environment a function with key groups `keys` needs to read its key secrets and start executions here
   * (region and credentials as Lambda sets them; the SDK's per-service endpoint variables point at this server:
   * the function's code is the deployed one, only the host differs).
   */
  env(keys: readonly KeyGroup[]): Record<string, string>;
  /** Requests answered so far, by operation (`StartExecution`, `GetSecretValue`, `BatchGetSecretValue`). */
  calls(operation: string): number;
  close(): Promise<void>;
}

const BENCH_STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:bench-delivery';
const secretArn = (group: KeyGroup) => `arn:aws:secretsmanager:us-east-1:000000000000:secret:bench-${group}`;

export async function startFakeAws(masterKey: string): Promise<FakeAws> {
  const calls = new Map<string, number>();
  const answer = (
    response: import('node:http').ServerResponse,
    status: number,
    body: unknown,
    json: string,
  ) => {
    response.writeHead(status, { 'content-type': `application/x-amz-json-${json}` });
    response.end(JSON.stringify(body));
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      const operation = target.split('.').pop() ?? '';
      calls.set(operation, (calls.get(operation) ?? 0) + 1);
      if (target === 'AWSStepFunctions.StartExecution') {
        const name = typeof body.name === 'string' ? body.name : 'x';
        return answer(
          response,
          200,
          {
            executionArn: `${BENCH_STATE_MACHINE_ARN.replace(':stateMachine:', ':execution:')}:${name}`,
            startDate: Date.now() / 1000,
          },
          '1.0',
        );
      }
      const groupOf = (id: unknown) => KEY_GROUP_NAMES.find((candidate) => secretArn(candidate) === id);
      const secretValue = (group: KeyGroup) => ({
        ARN: secretArn(group),
        Name: `bench-${group}`,
        SecretString: JSON.stringify({ purpose: group, key: masterKey }),
        VersionId: 'bench',
      });
      const group = groupOf(body.SecretId);
      if (target === 'secretsmanager.GetSecretValue' && group) {
        return answer(response, 200, secretValue(group), '1.1');
      }
      const batch = Array.isArray(body.SecretIdList) ? body.SecretIdList.map(groupOf) : [];
      if (target === 'secretsmanager.BatchGetSecretValue' && batch.length > 0 && batch.every(Boolean)) {
        return answer(
          response,
          200,
          { SecretValues: (batch as KeyGroup[]).map(secretValue), Errors: [] },
          '1.1',
        );
      }
      answer(response, 400, { __type: 'ResourceNotFoundException', message: target }, '1.1');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    env: (keys) => ({
      STATE_MACHINE_ARN: BENCH_STATE_MACHINE_ARN,
      AWS_ENDPOINT_URL_SFN: endpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'bench',
      AWS_SECRET_ACCESS_KEY: 'bench',
      ...Object.fromEntries(keys.map((group) => [KEY_GROUPS[group].env, secretArn(group)])),
    }),
    calls: (operation) => calls.get(operation) ?? 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
