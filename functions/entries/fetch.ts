/**
 * The fetch function's composition root: the table and the API key tag's key (it reads a record and shows it: no
 * code key, no workflow, no provider), and its bundle only the fetch endpoint. It also answers the API's `$default` route (a request
 * no route took) with 404 or 405 and a `code`: the lightest API function, and a miss needs nothing of it.
 */
import { deferredKeyRing } from '../adapters/keyring';
import { buildFetchHandler } from '../http/api';
import { API_ROUTES_ENV, routesFromEnv } from '../http/routes';
import { tableFromEnv } from '../wiring/dynamo';
import { answeringUnmatchedRoutes, apiEntry } from '../wiring/entries';
import { loadKeyRing } from '../wiring/keys';
import { buildStoreDeps } from '../wiring/store-deps';

export const handler = answeringUnmatchedRoutes(
  apiEntry(async () =>
    buildFetchHandler(
      buildStoreDeps(
        process.env,
        deferredKeyRing(() => loadKeyRing(process.env)),
        tableFromEnv(process.env),
      ),
    ),
  ),
  routesFromEnv(process.env[API_ROUTES_ENV]),
);
