import { ExecutionAlreadyExists, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { DeliveryInput, DeliveryWorkflow } from '../core/ports';
import { awsClientConfig } from './aws-client-config';

/**
 * Starts the delivery state machine on AWS. Express does not deduplicate execution names, so an SDK retry
 * after a lost answer, or a sweeper restart, can start a second execution: the deliver task's channel claim
 * makes that harmless (one message per channel). The name after the SID still finds it in the console.
 */
export class StepFunctionsWorkflow implements DeliveryWorkflow {
  constructor(
    private readonly stateMachineArn: string,
    private readonly client = new SFNClient({ ...awsClientConfig('@aws-sdk/client-sfn') }),
  ) {}

  async start(input: DeliveryInput): Promise<void> {
    try {
      await this.client.send(
        new StartExecutionCommand({
          stateMachineArn: this.stateMachineArn,
          // Restarts by the sweeper need a name of their own; the first start is named after the SID.
          name: input.restart ? `${input.sid}-r${Date.now()}` : input.sid,
          input: JSON.stringify({ sid: input.sid, channelIndex: 0, waitSeconds: input.waitSeconds }),
        }),
      );
    } catch (error) {
      // Standard workflows do refuse a reused name; the execution is running already, which is the goal.
      if (!(error instanceof ExecutionAlreadyExists)) throw error;
    }
  }
}
