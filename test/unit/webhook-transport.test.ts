/**
 * The webhook HTTP transport against servers on loopback: status codes, the time limit, no redirects, and the
 * address guard that keeps webhooks off the deployment's network.
 */
import type { LookupAddress } from 'node:dns';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import {
  guardedLookup,
  HttpWebhookTransport,
  type Resolve,
} from '../../functions/adapters/webhooks/http-transport';
import { webhookErrorKind, type WebhookRequest } from '../../functions/core/webhooks';

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

// --- an endpoint cannot hold the sender's sockets ------------------------------------------------------------------

/** A TCP server on 127.0.0.1 that counts its open sockets. */
async function countingServer(
  handle: (socket: Socket) => void,
): Promise<{ port: number; open: Set<Socket>; accepted: () => number; close: () => Promise<void> }> {
  const open = new Set<Socket>();
  let accepted = 0;
  const tcp = createTcpServer((socket) => {
    accepted++;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => undefined);
    handle(socket);
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  return {
    port: (tcp.address() as AddressInfo).port,
    open,
    accepted: () => accepted,
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => tcp.close(resolve));
    },
  };
}

/** An HTTP server (on the counting TCP server) that answers with `respond`. */
async function countingHttpServer(respond: (req: IncomingMessage, res: ServerResponse) => void) {
  const http = createServer(respond);
  const counting = await countingServer((socket) => http.emit('connection', socket));
  return counting;
}

/** Resolves when `open` is empty, or fails after `withinMs`. */
async function closedWithin(open: Set<Socket>, withinMs: number): Promise<number> {
  const started = Date.now();
  while (open.size > 0) {
    if (Date.now() - started > withinMs)
      throw new Error(`${open.size} socket(s) still open after ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}

it('an endpoint that answers 200 and trickles its body forever: the status counts, the socket is dropped at once', async () => {
  const timers = new Set<NodeJS.Timeout>();
  const trickling = await countingHttpServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.flushHeaders();
    const timer = setInterval(() => res.write('x'), 200);
    timers.add(timer);
    res.on('close', () => clearInterval(timer));
  });
  try {
    const timeoutMs = 1000;
    const started = Date.now();
    const responses = await Promise.all(
      Array.from({ length: 5 }, () =>
        local.post(request(`http://127.0.0.1:${trickling.port}/hook`, timeoutMs)),
      ),
    );
    expect(responses).toEqual(Array(5).fill({ status: 200 }));
    expect(Date.now() - started).toBeLessThan(timeoutMs);
    expect(trickling.accepted()).toBe(5);
    // Five deliveries, no socket left open on the endpoint's side soon after (long before the deadline).
    await closedWithin(trickling.open, 300);
  } finally {
    timers.forEach(clearInterval);
    await trickling.close();
  }
});

it('an endpoint that never answers headers: cut off at the deadline, and its socket closed', async () => {
  const silent = await countingHttpServer((req) => req.resume());
  try {
    const started = Date.now();
    expect(await local.post(request(`http://127.0.0.1:${silent.port}/hook`, 300))).toEqual({
      error: 'no response within 300 ms',
    });
    expect(Date.now() - started).toBeLessThan(800);
    expect(silent.accepted()).toBe(1);
    await closedWithin(silent.open, 300);
  } finally {
    await silent.close();
  }
});

it('one deadline covers the headers too: a status line trickled a byte at a time is cut off', async () => {
  const timers = new Set<NodeJS.Timeout>();
  const slowHeaders = await countingServer((socket) => {
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\n');
      const timer = setInterval(() => socket.write('X'), 100);
      timers.add(timer);
      socket.on('close', () => clearInterval(timer));
    });
  });
  try {
    const started = Date.now();
    expect(await local.post(request(`http://127.0.0.1:${slowHeaders.port}/hook`, 400))).toEqual({
      error: 'no response within 400 ms',
    });
    expect(Date.now() - started).toBeLessThan(900);
    await closedWithin(slowHeaders.open, 300);
  } finally {
    timers.forEach(clearInterval);
    await slowHeaders.close();
  }
});

it('one deadline covers TLS: a server that accepts the connection and never does the handshake', async () => {
  // Reads (so it sees the client go) but never answers the ClientHello.
  const mute = await countingServer((socket) => socket.resume());
  try {
    const started = Date.now();
    expect(await local.post(request(`https://127.0.0.1:${mute.port}/hook`, 300))).toEqual({
      error: 'no response within 300 ms',
    });
    expect(Date.now() - started).toBeLessThan(800);
    expect(mute.accepted()).toBe(1);
    await closedWithin(mute.open, 300);
  } finally {
    await mute.close();
  }
});

it('a refused connection is an error', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const response = await local.post(request(`http://127.0.0.1:${port}/hook`));
  expect(response).toEqual({ error: expect.stringContaining('ECONNREFUSED') });
});

it('an endpoint that closes the connection: the error names its code, the kind a delivery record keeps', async () => {
  behaviour = (req) => req.socket.destroy();
  const response = await local.post(request(`${base}/hook`));
  expect(response).toEqual({ error: expect.stringContaining('ECONNRESET') });
  expect(webhookErrorKind((response as { error: string }).error)).toBe('ECONNRESET');
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

  /** guardedLookup over a resolver that answers `addresses` for every name. */
  const lookupWith = (addresses: string[], allow = false) => {
    const resolve: Resolve = (_hostname, _options, callback) =>
      callback(
        null,
        addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
    return new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((done) =>
      guardedLookup(allow, resolve)('hooks.example.com', { all: true }, (error, address) =>
        done({ error, address }),
      ),
    );
  };

  it.each([
    '::7f00:1',
    '::ffff:0:7f00:1',
    '64:ff9b:1::7f00:1',
    '2002:a9fe:a9fe::',
    '2001::a9fe:a9fe',
    'fec0::1',
    '::ffff:169.254.169.254',
    'fd00:ec2::254',
    '169.254.169.254',
    '10.0.0.2',
  ])('a name that resolves to %s is refused at connect time', async (address) => {
    const result = await lookupWith(['93.184.215.14', address]);
    expect(result.error?.code).toBe('EADDRNOTPUBLIC');
    expect(result.error?.message).toBe(
      `hooks.example.com resolves to ${address}, which is not a public address`,
    );
    // The local stack's escape hatch still lets it through.
    expect((await lookupWith([address], true)).error).toBeNull();
  });

  it('a name that resolves to global unicast addresses only is allowed', async () => {
    const result = await lookupWith(['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    expect(result.error).toBeNull();
    expect(result.address).toEqual([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
  });
});
