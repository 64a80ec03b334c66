import { deliverOverChannel } from '../core/delivery';
import { taskEntry } from '../runtime';

export const handler = taskEntry(deliverOverChannel);
