/**
 * The deliver function, invoked directly by the operator (`providers check`): on AWS through Lambda's Invoke
 * with the operator's own credentials, the function running under its own role; locally through the running
 * `npm start`'s stand-in for Invoke (local/stack.ts).
 */
import {
  GetFunctionCommand,
  InvokeCommand,
  LambdaClient,
  paginateListFunctions,
} from '@aws-sdk/client-lambda';
import { FUNCTIONS } from '../../lib/functions';
import { LOCAL_DELIVER_INVOKE_PATH } from '../../local/stack';
import { AdminError } from './framework';

export type DeliverInvoker = (event: unknown) => Promise<unknown>;

/**
 * The deliver function's logical id, as CloudFormation tags the function with it (`aws:cloudformation:logical-id`):
 * the manifest's id, `Function`, and the 8-character hash CDK may add (lib/constructs/logical-ids.ts).
 */
const DELIVER_LOGICAL_ID = new RegExp(`^${FUNCTIONS.deliver.id}Function([0-9A-F]{8})?$`);

/**
 * The stack's deliver function: CloudFormation names a function after its stack and logical id (shortened when
 * long) and tags it with both, so the functions whose name mentions the id are read for those tags.
 */
async function findDeliverFunction(client: LambdaClient, stack: string): Promise<string> {
  const candidates: string[] = [];
  for await (const page of paginateListFunctions({ client }, {}))
    for (const fn of page.Functions ?? [])
      if (fn.FunctionName?.includes(FUNCTIONS.deliver.id) && fn.FunctionArn) candidates.push(fn.FunctionArn);
  for (const arn of candidates) {
    const { Tags } = await client.send(new GetFunctionCommand({ FunctionName: arn }));
    if (
      Tags?.['aws:cloudformation:stack-name'] === stack &&
      DELIVER_LOGICAL_ID.test(Tags['aws:cloudformation:logical-id'] ?? '')
    )
      return arn;
  }
  throw new AdminError(
    `No deliver function of stack ${stack} found in this account and region: check --stack and --region`,
  );
}

/** An invoker of the deployed stack's deliver function, and its client's `destroy`. */
export function deployedDeliverInvoker(
  stack: string,
  region: string | undefined,
): { invoke: DeliverInvoker; destroy: () => void } {
  const client = new LambdaClient(region ? { region } : {});
  let arn: Promise<string> | undefined;
  return {
    destroy: () => client.destroy(),
    invoke: async (event) => {
      arn ??= findDeliverFunction(client, stack);
      const output = await client.send(
        new InvokeCommand({
          FunctionName: await arn,
          Payload: new TextEncoder().encode(JSON.stringify(event)),
        }),
      );
      return functionResult(output.FunctionError, new TextDecoder().decode(output.Payload));
    },
  };
}

/** An invoker of the running local stack's deliver function. */
export function localDeliverInvoker(baseUrl: string): DeliverInvoker {
  return async (event) => {
    let response: Response;
    try {
      response = await fetch(`${baseUrl}${LOCAL_DELIVER_INVOKE_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(event),
      });
    } catch {
      throw new AdminError(`Cannot reach the local stack at ${baseUrl}: is \`npm start\` still running?`);
    }
    if (response.status === 404)
      throw new AdminError('The running local stack has no deliver invoke: restart `npm start`');
    return functionResult(response.headers.get('x-amz-function-error') ?? undefined, await response.text());
  };
}

/** The function's answer, or its error (Lambda's `{errorType, errorMessage}`) as an AdminError. */
function functionResult(functionError: string | undefined, payload: string): unknown {
  let json: unknown;
  try {
    json = JSON.parse(payload);
  } catch {
    throw new AdminError(`The deliver function answered something not JSON: ${payload.slice(0, 200)}`);
  }
  if (functionError !== undefined) {
    const { errorType, errorMessage } = (json ?? {}) as { errorType?: unknown; errorMessage?: unknown };
    throw new AdminError(`The deliver function failed (${String(errorType)}): ${String(errorMessage)}`);
  }
  return json;
}
