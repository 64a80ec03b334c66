import { buildApi } from '../http/api';
import { apiEntry } from '../runtime';

export const handler = apiEntry((deps) => buildApi(deps).fetch);
