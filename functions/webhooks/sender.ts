import { webhookSenderEntry } from '../runtime';

/** Webhook jobs from the SQS queue: sign and POST each event, retry on the schedule, expire codes on time. */
export const handler = webhookSenderEntry();
