/** A one-route HTTP server on 127.0.0.1 that records each request and answers as told: the providers' stand-in. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

interface WireRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface WireServer {
  url: string;
  requests: WireRequest[];
  /** `delayMs`: hold the answer that long (a slow provider); the request is recorded when it arrives. */
  answer: { status: number; headers?: Record<string, string>; body: unknown; delayMs?: number };
  close(): Promise<void>;
}

export async function startWireServer(answer: WireServer['answer']): Promise<WireServer> {
  const requests: WireRequest[] = [];
  const state = { answer };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const { status, headers, body, delayMs } = state.answer;
      const answer = () => {
        if (response.destroyed) return;
        response.writeHead(status, { 'content-type': 'application/json', ...headers });
        response.end(JSON.stringify(body));
      };
      if (delayMs) setTimeout(answer, delayMs).unref();
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get answer() {
      return state.answer;
    },
    set answer(value) {
      state.answer = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
