/**
 * The answer recorder (test/support/answer-recorder.ts) and its comparison (scripts/compare-answers.ts): what a
 * second run of the same code would draw differently is normalised, what the code answers is not.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Placeholders,
  installAnswerRecorder,
  normaliseTest,
  recordAdmin,
  recordPoll,
  type RecordedAnswer,
} from '../support/answer-recorder';
import { compareRecordings, readRecording } from '../../scripts/compare-answers';

const SID_A = `VE${'a'.repeat(32)}`;
const SID_B = `VE${'b'.repeat(32)}`;
const SERVICE = `VA${'c'.repeat(32)}`;
const KEY = `otpk_${'K'.repeat(43)}`;

describe('Placeholders', () => {
  it('numbers random values by first appearance, per kind, and blanks the clock; keeps prices and durations', () => {
    const placeholders = new Placeholders();
    expect(
      placeholders.value({
        path: `/v2/Services/${SERVICE}/Verifications/${SID_B}`,
        sids: `${SID_B} ${SID_A} ${SID_B}`,
        key: KEY,
        secret: 'whsec_2MsHC9JnHLgf9+nIa+FvrSvMZrYuRfi9o0tXiNgSG6Y=',
        request: '0d4f1c1e-8a4b-4c2a-9f7e-3b2a1c0d9e8f',
        created: '2026-01-02T03:04:05.678Z',
        ttl: 1767323045,
        ms: 1767323045678,
        price: '0.0500',
        waitSeconds: 8,
        balance: 25_000_000,
      }),
    ).toEqual({
      path: '/v2/Services/<VA#1>/Verifications/<VE#1>',
      sids: '<VE#1> <VE#2> <VE#1>',
      key: '<otpk#1>',
      secret: '<whsec#1>',
      request: '<uuid#1>',
      created: '<time>',
      ttl: '<epoch>',
      ms: '<epoch>',
      price: '0.0500',
      waitSeconds: 8,
      balance: 25_000_000,
    });
  });

  it('blanks generated codes in the carrier inbox, measured durations and webhook signatures and times', () => {
    const placeholders = new Placeholders();
    const answer = placeholders.answer({
      method: 'GET',
      path: '/_local/messages?to=%2B14155550100',
      headers: {},
      body: [
        { to: '+14155550100', body: 'Your code is 123456.' },
        { to: '+14155550100', body: 'Acme: 987654, again 123456' },
      ],
    });
    expect(answer.body).toEqual([
      { to: '+14155550100', body: 'Your code is <code#1>.' },
      { to: '+14155550100', body: 'Acme: <code#2>, again <code#1>' },
    ]);
    expect(
      placeholders.value({
        eventId: `EV${'e'.repeat(32)}`,
        'webhook-timestamp': '1795691014',
        'webhook-signature': 'v1,DuLnrBvxFqYSMn9Lkprkuq2a3BSpB9PK8JLVujEUB/Q=',
        token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl',
        keyId: '802451e1b100',
        durationMs: 240,
        timeline: 'attempt 1: 200 in 582 ms, delivered',
        attempt: 2,
      }),
    ).toEqual({
      eventId: '<EV#1>',
      'webhook-timestamp': '<epoch>',
      'webhook-signature': '<signature#1>',
      token: '<jwt#1>',
      keyId: '<id#1>',
      durationMs: '<duration>',
      timeline: 'attempt 1: 200 in <duration> ms, delivered',
      attempt: 2,
    });
    // Applied again, as the comparison does, a normalised answer stays as it is.
    expect(new Placeholders().answer(answer)).toEqual(answer);
  });
});

describe('normaliseTest', () => {
  const line = (seq: string, fields: Partial<RecordedAnswer>): RecordedAnswer => ({
    file: 'test/integration/x.test.ts',
    test: 'a test',
    seq,
    kind: 'http',
    method: 'GET',
    path: '/',
    status: 200,
    headers: {},
    body: {},
    ...fields,
  });

  it('keeps the last of reads of one /_local/ path in a row, sorts lists of SIDs by content, parses admin JSON', () => {
    const [first, second] = [`VA${'1'.repeat(32)}`, `VA${'2'.repeat(32)}`];
    const lines = normaliseTest([
      line('1', {
        method: 'admin service create',
        path: '',
        body: { stdout: `{"serviceSid":"${first}","at":1795691014}`, stderr: '' },
      }),
      line('2', { method: 'POST', path: `/v2/Services/${second}/Verifications` }),
      line('3', { path: '/_local/messages?to=1', body: [] }),
      line('4', { path: '/_local/messages?to=1', body: [{ body: 'Code 123456' }] }),
      line('5', {
        path: '/console/api/me',
        body: {
          services: [
            { sid: second, name: 'b' },
            { sid: first, name: 'a' },
          ],
        },
      }),
      line('6', { path: '/_local/messages?to=1', body: [{ body: 'Code 123456' }] }),
    ]);
    expect(lines.map(({ seq, path, body }) => [seq, path, body])).toEqual([
      ['1', '', { stdout: { serviceSid: '<VA#1>', at: '<epoch>' }, stderr: '' }],
      ['2', '/v2/Services/<VA#2>/Verifications', {}],
      ['3', '/_local/messages?to=1', [{ body: 'Code <code#1>' }]],
      [
        '4',
        '/console/api/me',
        {
          services: [
            { sid: '<VA#1>', name: 'a' },
            { sid: '<VA#2>', name: 'b' },
          ],
        },
      ],
      ['5', '/_local/messages?to=1', [{ body: 'Code <code#1>' }]],
    ]);
    expect(normaliseTest(lines)).toEqual(lines);
  });
});

describe('recorder', () => {
  let directory: string;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'answers-'));
    // Answers `/slow` late, so that requests sent together end in another order than they were sent.
    server = createServer((request, response) => {
      const delay = request.url?.startsWith('/slow') ? 60 : 0;
      setTimeout(() => {
        response.writeHead(200, { 'content-type': 'application/json', 'x-api-flag': 'kept' });
        response.end(JSON.stringify({ path: request.url, sid: request.url?.includes('b') ? SID_B : SID_A }));
      }, delay);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.close();
    rmSync(directory, { recursive: true, force: true });
  });

  /** Records what `run` does in a test named `test`, and returns the recorded lines. */
  async function record(run: () => Promise<unknown>): Promise<RecordedAnswer[]> {
    const recorder = installAnswerRecorder({
      directory,
      rootDir: join(__dirname, '..', '..'),
      testPath: __filename,
      currentTest: () => 'a test',
    });
    try {
      await run();
    } finally {
      recorder.flush();
    }
    return readRecording(join(directory, 'test__unit__answer-recorder.test.ts.jsonl'));
  }

  it('keeps only the last probe of a poll, and numbers the answers after it from one slot', async () => {
    let probes = 0;
    const lines = await record(async () => {
      await recordPoll(async (attempt) => {
        while ((await attempt(() => fetch(`${url}/poll-${++probes}`))).status !== 200 || probes < 3);
      });
      await recordAdmin(['service', 'show'], async (out) => (out(`shown ${SERVICE}`), 0));
    });
    expect(lines.map((line) => [line.seq, line.kind, line.path, line.body])).toEqual([
      ['1.1', 'http', '/poll-3', { path: '/poll-3', sid: '<VE#1>' }],
      ['2', 'admin', '', { stdout: 'shown <VA#1>', stderr: '' }],
    ]);
    expect(lines[0]!.headers).toEqual({ 'content-type': 'application/json', 'x-api-flag': 'kept' });
  });

  it('sorts answers to requests sent together by content, whichever ended first', async () => {
    const lines = await record(() => Promise.all([fetch(`${url}/slow-a`), fetch(`${url}/fast-b`)]));
    expect(lines.map((line) => [line.seq, line.path])).toEqual([
      ['1', '/fast-b'],
      ['2', '/slow-a'],
    ]);
  });

  it('does not record requests the test did not make itself', async () => {
    const lines = await record(async () => {
      // As the service's background work does: `fetch` called with no frame of the test file above it.
      await Promise.resolve(`${url}/background`).then(fetch);
      await fetch(`${url}/asked`);
    });
    expect(lines.map((line) => line.path)).toEqual(['/asked']);
  });
});

describe('compareRecordings', () => {
  const answer = (seq: string, body: unknown): RecordedAnswer => ({
    file: 'test/integration/x.test.ts',
    test: 'a test',
    seq,
    kind: 'http',
    method: 'GET',
    path: '/',
    status: 200,
    headers: {},
    body,
  });

  it('finds differing, missing and extra answers by file, test and sequence number', () => {
    const comparison = compareRecordings(
      [answer('1', { a: 1 }), answer('2', { b: [1, 2] }), answer('3', {})],
      [answer('1', { a: 1 }), answer('2', { b: [1, 3] }), answer('4', {})],
    );
    expect(comparison.same).toBe(1);
    expect(comparison.differing.map(({ key, paths }) => [key, paths])).toEqual([
      ['test/integration/x.test.ts › a test #2', ['$.body.b.1']],
    ]);
    expect(comparison.missing.map(({ key }) => key)).toEqual(['test/integration/x.test.ts › a test #3']);
    expect(comparison.extra.map(({ key }) => key)).toEqual(['test/integration/x.test.ts › a test #4']);
  });

  it('blanks the fields named unstable, and takes a racing PENDING for DELIVERED but not for FAILED', () => {
    const unstable = [
      { file: 'test/integration/x.test.ts', test: 'a', fields: ['expected'], reason: 'timing' },
    ];
    const comparison = compareRecordings(
      [
        answer('1', { expected: 7.8, n: 1 }),
        answer('2', { delivery_status: 'PENDING' }),
        answer('3', { delivery_status: 'PENDING' }),
      ],
      [
        answer('1', { expected: 7.6, n: 1 }),
        answer('2', { delivery_status: 'DELIVERED' }),
        answer('3', { delivery_status: 'FAILED' }),
      ],
      unstable,
    );
    expect(comparison.same).toBe(2);
    expect(comparison.differing.map(({ key, paths }) => [key, paths])).toEqual([
      ['test/integration/x.test.ts › a test #3', ['$.body.delivery_status']],
    ]);
  });

  it('leaves out unstable tests altogether', () => {
    const unstable = [{ file: 'test/integration/x.test.ts', test: 'a te', reason: 'timing' }];
    const comparison = compareRecordings([answer('1', 1), answer('2', 1)], [answer('1', 2)], unstable);
    expect({ same: comparison.same, unstable: comparison.unstable, differing: comparison.differing }).toEqual(
      {
        same: 0,
        unstable: 2,
        differing: [],
      },
    );
  });
});
