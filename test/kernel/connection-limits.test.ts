import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionTimeouts } from '../../kernel/http/connection-limits.ts';
import { listenEarly } from '../../kernel/http/early-listener.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { malformedHttpCases } from './bad-input-cases.ts';

/**
 * What Node's HTTP parser refuses answers the JSON error body, and connections that send
 * nothing or stall mid-headers are closed after server.headersTimeoutMs; a request whose
 * headers are in and an SSE stream are not cut, however long they are quiet. Raw sockets,
 * because a well-behaved client cannot send what is tested here.
 */
const UI_BRIDGE = fileURLToPath(new URL('../host/fixtures/ui-bridge', import.meta.url));
/** Small, so that the timeouts pass while the test waits on events; never asserted as a duration. */
const TIMEOUT_MS = 300;
let t: TestKernel;
let port: number;

beforeAll(async () => {
  t = await startTestKernel({ server: { headersTimeoutMs: TIMEOUT_MS, keepAliveTimeoutMs: TIMEOUT_MS } });
  port = Number(new URL(t.url).port);
  await installAndEnable(t, UI_BRIDGE);
});
afterAll(async () => { await t?.stop(); });

interface RawAnswer { status: number; headers: Record<string, string>; body: string; raw: string }

/** Opens a connection, sends `data` (if any), and collects everything the server sends until it closes the connection. */
function exchange(data?: string | Buffer, to = port): { socket: Socket; answer: Promise<RawAnswer> } {
  const socket = connect(to, '127.0.0.1');
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(parse(Buffer.concat(chunks).toString('utf8'))));
  });
  if (data !== undefined) socket.write(data);
  return { socket, answer };
}

function parse(raw: string): RawAnswer {
  const [head = '', body = ''] = raw.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body, raw };
}

function expectJsonError(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status, answer.raw).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.headers.connection).toBe('close');
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  const body = JSON.parse(answer.body);
  expect(body).toEqual({ error: expect.any(String), code, requestId: answer.headers['x-request-id'] });
}

const host = () => `Host: 127.0.0.1:${port}\r\n`;

describe("what Node's parser refuses", () => {
  it('each case of bad-input-cases answers its status and code with the JSON error body, connection closed', async () => {
    for (const c of malformedHttpCases(host())) {
      const answer = await exchange(c.raw).answer;
      expect(answer.status, `${c.label}: ${answer.raw.slice(0, 300)}`).toBe(c.status);
      expectJsonError(answer, c.status, c.code);
    }
  });

  it('a malformed request after a complete one on a keep-alive connection', async () => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let first!: () => void;
    const answered = new Promise<void>((resolve) => { first = resolve; });
    socket.on('data', (chunk: Buffer) => { chunks.push(chunk); if (Buffer.concat(chunks).includes('"status"')) first(); });
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(`GET /api/health HTTP/1.1\r\n${host()}\r\n`);
    await answered;
    socket.write('BOGUS\r\n\r\n');
    await closed;
    const raw = Buffer.concat(chunks).toString('utf8');
    expect(raw.startsWith('HTTP/1.1 200'), raw).toBe(true);
    expectJsonError(parse(raw.slice(raw.indexOf('HTTP/1.1 400'))), 400, 'malformed_request');
  });

  it('the same answers while the server is still starting (the early listener)', async () => {
    const early = await listenEarly('127.0.0.1', 0, connectionTimeouts({ server: { headersTimeoutMs: TIMEOUT_MS }, limits: {} }));
    try {
      const earlyPort = Number(new URL(early.url).port);
      expectJsonError(await exchange('NOT HTTP AT ALL\r\n\r\n', earlyPort).answer, 400, 'malformed_request');
      expectJsonError(await exchange(`GET / HTTP/1.1\r\nHost: x\r\nX-Filler: ${'b'.repeat(20_000)}\r\n\r\n`, earlyPort).answer, 431, 'request_header_too_large');
      expectJsonError(await exchange(undefined, earlyPort).answer, 408, 'request_timeout');
      const starting = await exchange('GET / HTTP/1.1\r\nHost: x\r\n\r\n', earlyPort).answer;
      expect(starting.status).toBe(503);
      expect(starting.raw).toContain('"code":"starting"');
    } finally {
      await early.close(0);
    }
  });
});

describe('idle connections', () => {
  it('a socket that sends nothing is answered 408 request_timeout and closed', async () => {
    expectJsonError(await exchange().answer, 408, 'request_timeout');
  });

  it('a socket that stops mid-headers is closed too', async () => {
    expectJsonError(await exchange(`GET /api/health HTTP/1.1\r\n${host()}X-Partial: y`).answer, 408, 'request_timeout');
  });

  it('an idle keep-alive connection is closed after its answer', async () => {
    const { raw } = await exchange(`GET /api/health HTTP/1.1\r\n${host()}\r\n`).answer;
    expect(raw.startsWith('HTTP/1.1 200'), raw).toBe(true);
    expect(raw).not.toContain('408');
  });

  it('a request whose headers are in, and an SSE stream, stay open longer than the timeout', async () => {
    const controller = new AbortController();
    const stream = await fetch(`${t.url}/api/plugins/ui-bridge/bridge/stream/updates`, { signal: controller.signal });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    const until = async (text: string) => {
      while (!seen.includes(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before "${text}"`);
        seen += decoder.decode(value);
      }
    };
    await until('event: open');

    // A company create whose body is half sent: its headers are in, so the headers timeout does not apply.
    const body = JSON.stringify({ name: 'Slow Upload Co' });
    const slow = exchange(`POST /api/companies HTTP/1.1\r\n${host()}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, 5)}`);

    // Both outlive a silent socket opened after them: it is closed once the timeout has passed.
    expectJsonError(await exchange().answer, 408, 'request_timeout');
    expectJsonError(await exchange().answer, 408, 'request_timeout');

    slow.socket.write(body.slice(5));
    const created = await slow.answer;
    expect(created.status, created.raw).toBe(201);
    expect(JSON.parse(created.body).name).toBe('Slow Upload Co');

    const ping = await t.api.post('/api/plugins/ui-bridge/actions/ping', { params: { n: 7 } });
    expect(ping.status, ping.text).toBe(200);
    await until('"pinged"');
    controller.abort();
  });
});
