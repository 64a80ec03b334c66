/**
 * The webhook HTTP transport against servers on loopback: status codes, the time limit, no redirects, and the
 * address guard that keeps webhooks off the deployment's network.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardedLookup, HttpWebhookTransport } from '../../functions/adapters/webhooks/http-transport';
import type { WebhookRequest } from '../../functions/core/webhooks';

let server: Server;
let base: string;
let behaviour: (req: IncomingMessage, res: ServerResponse) => void;
const received: { headers: IncomingMessage['headers']; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      behaviour(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  received.length = 0;
});

const request = (url: string, timeoutMs = 2000): WebhookRequest => ({
  url,
  headers: { 'content-type': 'application/json', 'webhook-id': 'EV1' },
  body: '{"hello":"world"}',
  timeoutMs,
  serviceSid: 'VA1',
  endpointSid: 'WH1',
  attempt: 1,
});

const local = new HttpWebhookTransport({ allowPrivateTargets: true });

it('posts the body and headers and answers the status', async () => {
  behaviour = (_req, res) => res.writeHead(204).end();
  expect(await local.post(request(`${base}/hook`))).toEqual({ status: 204 });
  expect(received).toHaveLength(1);
  expect(received[0]!.body).toBe('{"hello":"world"}');
  expect(received[0]!.headers['webhook-id']).toBe('EV1');
  expect(received[0]!.headers['content-length']).toBe('17');
});

it('a 5xx is a status, not an exception; a redirect is not followed', async () => {
  behaviour = (_req, res) => res.writeHead(503).end('busy');
  expect(await local.post(request(`${base}/hook`))).toEqual({ status: 503 });
  behaviour = (_req, res) => res.writeHead(302, { location: `${base}/elsewhere` }).end();
  expect(await local.post(request(`${base}/hook`))).toEqual({ status: 302 });
  expect(received).toHaveLength(2);
});

it('a server that never answers is cut off at the time limit', async () => {
  behaviour = () => undefined; // holds the request open
  const started = Date.now();
  expect(await local.post(request(`${base}/hook`, 300))).toEqual({ error: 'no response within 300 ms' });
  expect(Date.now() - started).toBeLessThan(1500);
});

it('a refused connection is an error', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const response = await local.post(request(`http://127.0.0.1:${port}/hook`));
  expect(response).toEqual({ error: expect.stringContaining('ECONNREFUSED') });
});

describe('outside the local stack (private targets not allowed)', () => {
  const strict = new HttpWebhookTransport({ allowPrivateTargets: false });

  it('refuses http:// and private address literals without connecting', async () => {
    behaviour = (_req, res) => res.writeHead(200).end();
    expect(await strict.post(request(`${base}/hook`))).toEqual({ error: expect.stringContaining('https') });
    const port = (server.address() as AddressInfo).port;
    for (const url of [
      `https://127.0.0.1:${port}/hook`,
      `https://[::1]:${port}/hook`,
      'https://10.0.0.1/hook',
    ]) {
      expect(await strict.post(request(url))).toEqual({ error: expect.stringContaining('URL refused') });
    }
    expect(received).toEqual([]);
  });

  it('checks the addresses a host name resolves to, in the lookup the connection uses', async () => {
    const lookup = (allow: boolean) =>
      new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
        guardedLookup(allow)('localhost', { all: true }, (error, address) => resolve({ error, address })),
      );
    const refused = await lookup(false);
    expect(refused.error?.code).toBe('EADDRNOTPUBLIC');
    expect(refused.error?.message).toMatch(
      /localhost resolves to (127\.0\.0\.1|::1), which is not a public address/,
    );
    const allowed = await lookup(true);
    expect(allowed.error).toBeNull();
    expect(allowed.address).toEqual(
      expect.arrayContaining([expect.objectContaining({ family: expect.any(Number) })]),
    );
  });
});
