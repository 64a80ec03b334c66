import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import {
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { types } from 'node:util';
import {
  checkWebhookUrl,
  isPublicAddress,
  type WebhookRequest,
  type WebhookResponse,
  type WebhookTransport,
} from '../../core/webhooks';

export interface HttpWebhookTransportOptions {
  /** http:// and private addresses (the local stack only). */
  allowPrivateTargets: boolean;
}

/**
 * Posts webhooks with node:http(s). The URL is checked again here (a table edited by hand must not get around
 * the registration check), and every address the host name resolves to is checked in the connection's own DNS
 * lookup, so the address connected to is the one checked (no DNS-rebinding gap between check and connect).
 * Redirects are not followed.
 *
 * An endpoint cannot hold the sender's sockets: one deadline covers the whole exchange (DNS, connecting, TLS,
 * writing the request, the response headers), and the connection is destroyed as soon as the status is read or
 * the deadline passes. Only the status matters, so the body is never read: an endpoint that answers 200 and then
 * trickles its body loses the connection at once instead of keeping it (and the sender's Lambda) busy.
 */
export class HttpWebhookTransport implements WebhookTransport {
  constructor(private readonly options: HttpWebhookTransportOptions) {}

  post(request: WebhookRequest): Promise<WebhookResponse> {
    const checked = checkWebhookUrl(request.url, { allowPrivate: this.options.allowPrivateTargets });
    if (!checked.ok) return Promise.resolve({ error: `URL refused: ${checked.reason}` });
    const url = checked.url;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const options: RequestOptions = {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      // A fresh connection per delivery: each one goes through the address check, and a slow endpoint holds
      // nothing shared.
      agent: false,
      lookup: guardedLookup(this.options.allowPrivateTargets),
    };

    return new Promise<WebhookResponse>((resolve) => {
      let settled = false;
      let outgoing: ClientRequest | undefined;
      // Every way out goes through here: the answer is given once and the connection is always torn down.
      const finish = (response: WebhookResponse) => {
        clearTimeout(timer);
        outgoing?.destroy();
        if (settled) return;
        settled = true;
        resolve(response);
      };
      const timer = setTimeout(
        () => finish({ error: `no response within ${request.timeoutMs} ms` }),
        request.timeoutMs,
      );
      try {
        outgoing = send(url, options, (response: IncomingMessage) => {
          // The status is all a delivery needs: drop the response (and its socket) without reading the body.
          response.on('error', () => undefined);
          const status = response.statusCode ?? 0;
          response.destroy();
          finish({ status });
        });
      } catch (error) {
        finish({ error: describe(error) });
        return;
      }
      outgoing.on('error', (error) => finish({ error: describe(error) }));
      outgoing.end(request.body);
    });
  }
}

/**
 * The error's text, led by its code when the text does not name it (a reset connection is "socket hang up"): the
 * delivery record keeps only the code, never the text.
 */
function describe(error: unknown): string {
  // isNativeError, not instanceof: node's own errors come from another realm under jest.
  if (!types.isNativeError(error)) return String(error);
  const { code } = error as NodeJS.ErrnoException;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
}

/** The resolver under the guard: node's own `dns.lookup` (getaddrinfo) with `all: true`; tests pass another. */
export type Resolve = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A DNS lookup that fails when any resolved address is not global unicast (`isPublicAddress`), unless private
 * targets are allowed.
 */
export function guardedLookup(allowPrivateTargets: boolean, resolve: Resolve = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...(options as LookupOptions), all: true }, (error, addresses) => {
      const cb = callback as (
        error: NodeJS.ErrnoException | null,
        address: string | LookupAddress[],
        family?: number,
      ) => void;
      if (error) return cb(error, []);
      const list = addresses as LookupAddress[];
      const blocked = allowPrivateTargets ? undefined : list.find((entry) => !isPublicAddress(entry.address));
      if (blocked || list.length === 0) {
        const refusal: NodeJS.ErrnoException = new Error(
          blocked
            ? `${hostname} resolves to ${blocked.address}, which is not a public address`
            : `${hostname} has no address`,
        );
        refusal.code = 'EADDRNOTPUBLIC';
        return cb(refusal, []);
      }
      if ((options as LookupOptions).all) return cb(null, list);
      const first = list[0]!;
      return cb(null, first.address, first.family);
    });
  };
}
