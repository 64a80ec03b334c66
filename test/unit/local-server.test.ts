/**
 * The local server's local-only routes (`/_local/...`, which show code-bearing messages) answer only requests
 * that name a loopback host: a page on another name rebound to 127.0.0.1 (DNS rebinding) reaches the port, but
 * its requests still carry its own `Host`.
 */
import { request } from 'node:http';
import type { Server } from 'node:net';
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
    ],
  }));
  server = started.server;
  port = Number(new URL(started.url).port);
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

/** GET `path` on the server over loopback, naming `host`. */
function get(path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test.each(['evil.example', 'evil.example:3000', 'localhost.evil.example', '127.0.0.1.nip.io'])(
  'a /_local route named by %s answers 403 and shows nothing',
  async (host) => {
    const before = handled;
    const answer = await get('/_local/messages', host);
    expect(answer.status).toBe(403);
    expect(answer.body).not.toContain('482913');
    expect(handled).toBe(before);
  },
);

test('a /_local route named by a loopback host answers', async () => {
  for (const host of ['localhost', `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'LOCALHOST']) {
    const answer = await get('/_local/messages', host);
    expect({ host, status: answer.status }).toEqual({ host, status: 200 });
    expect(answer.body).toContain('482913');
  }
});
