/**
 * The local server's local-only routes (`/_local/...`, which show code-bearing messages) answer only requests
 * that name a loopback host: a page on another name rebound to 127.0.0.1 (DNS rebinding) reaches the port, but
 * its requests still carry its own `Host`. A path is routed by method too.
 */
import { request } from 'node:http';
import { connect, type Server } from 'node:net';
import { startHttpServer } from '../../local/server';

let server: Server;
let port = 0;
let handled = 0;

beforeAll(async () => {
  const started = await startHttpServer(0, () => ({
    api: [],
    local: [
      {
        method: 'GET',
        path: '/_local/messages',
        handle: () => (handled++, { status: 200, body: [{ body: 'Your code is 482913' }] }),
      },
      { method: 'POST', path: '/_local/carrier/rules', handle: () => ({ status: 200, body: 'set' }) },
      { method: 'DELETE', path: '/_local/carrier/rules', handle: () => ({ status: 200, body: 'cleared' }) },
    ],
  }));
  server = started.server;
  port = Number(new URL(started.url).port);
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

type Answer = { status: number; body: string; allow: string | undefined };

/** `method` `path` on the server over loopback, naming `host`, sending `payload` if given. */
function call(method: string, path: string, host = 'localhost', payload?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // A connection of its own (no keep-alive): a refused oversized body leaves its connection unusable.
    const options = { host: '127.0.0.1', port, method, path, headers: { host }, agent: false };
    const req = request(options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body, allow: res.headers.allow }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

test.each(['evil.example', 'evil.example:3000', 'localhost.evil.example', '127.0.0.1.nip.io'])(
  'a /_local route named by %s answers 403 and shows nothing',
  async (host) => {
    const before = handled;
    const answer = await call('GET', '/_local/messages', host);
    expect(answer.status).toBe(403);
    expect(answer.body).not.toContain('482913');
    expect(handled).toBe(before);
  },
);

test('a /_local route named by a loopback host answers', async () => {
  for (const host of ['localhost', `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'LOCALHOST']) {
    const answer = await call('GET', '/_local/messages', host);
    expect({ host, status: answer.status }).toEqual({ host, status: 200 });
    expect(answer.body).toContain('482913');
  }
});

test('a path with a local route per method answers each method with its own', async () => {
  expect(await call('POST', '/_local/carrier/rules')).toMatchObject({ status: 200, body: '"set"' });
  expect(await call('DELETE', '/_local/carrier/rules')).toMatchObject({ status: 200, body: '"cleared"' });
});

test('a method a local path has no route for answers 405, naming the methods it has', async () => {
  const answer = await call('PUT', '/_local/carrier/rules');
  expect(answer).toMatchObject({ status: 405, allow: 'POST, DELETE' });
  expect(JSON.parse(answer.body)).toMatchObject({ code: 'method_not_allowed' });
  expect(await call('POST', '/_local/messages')).toMatchObject({ status: 405, allow: 'GET' });
});

test('a body over the API Gateway payload limit answers 413 as API Gateway does, without a code', async () => {
  const answer = await call(
    'POST',
    '/_local/carrier/rules',
    'localhost',
    Buffer.alloc(12 * 1024 * 1024, 'x'),
  );
  expect(answer.status).toBe(413);
  expect(JSON.parse(answer.body)).toEqual({ message: 'Request Entity Too Large' });
});

test('a refused oversized body closes its connection, so a keep-alive client never reuses it', async () => {
  // The rest of the refused body is never read: a request sent after it on the same connection would hang.
  const size = 11 * 1024 * 1024;
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (data: Buffer) => (received += data.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<boolean>((resolve) => {
    socket.once('close', () => resolve(true));
    setTimeout(() => resolve(false), 5000).unref();
  });
  socket.write(`POST /_local/carrier/rules HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${size}\r\n\r\n`);
  socket.write(Buffer.alloc(size, 'x'));
  const wasClosed = await closed;
  socket.destroy();
  expect(received).toMatch(/^HTTP\/1\.1 413 /);
  expect(received).toMatch(/\r\nconnection: close\r\n/i);
  expect(wasClosed).toBe(true);
});
