/** The delivery workflow of the functions that start it (send, the sweeper): the only users of the SFN client. */
import type { DeliveryWorkflow } from '../core/ports';
import { StepFunctionsWorkflow } from '../adapters/sfn-workflow';
import type { Env } from './env';

/**
 * `STATE_MACHINE_ARN`'s workflow. Unset (the bench's cold starts run the send bundle without one): a workflow
 * whose start fails, as a failed StartExecution does; the sweeper restarts such deliveries.
 */
export function workflowFromEnv(env: Env): DeliveryWorkflow {
  const stateMachineArn = env.STATE_MACHINE_ARN;
  if (stateMachineArn) return new StepFunctionsWorkflow(stateMachineArn);
  return { start: () => Promise.reject(new Error('STATE_MACHINE_ARN is not set for this function')) };
}
