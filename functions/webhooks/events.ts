import { webhookEventsEntry } from '../runtime';

/** The table's DynamoDB stream (verification items only, by the event source's filter) to webhook jobs. */
export const handler = webhookEventsEntry();
