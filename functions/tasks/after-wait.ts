import { afterReceiptWait } from '../core/delivery';
import { taskEntry } from '../runtime';

export const handler = taskEntry(afterReceiptWait);
