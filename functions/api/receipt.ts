import { buildReceiptHandler } from '../http/api';
import { apiEntry } from '../runtime';

export const handler = apiEntry((deps) => buildReceiptHandler(deps));
