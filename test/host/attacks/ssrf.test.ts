import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installPlugin } from '../../support/plugins.ts';
import { variant } from './support.ts';

/**
 * SANDBOX.md class 3: SSRF and credential leaks through ctx.http.fetch. The `http-probe`
 * fixture (test/host/fixtures/http-probe) fetches what it is told; two loopback servers stand
 * for two allow-listed hosts, reached through the operator's private-network allowance as in
 * test/host/http-fetch.test.ts. Different ports make different origins.
 */
let t: TestKernel;
let first: Server;
let second: Server;
let portA: number;
let portB: number;
const KEY = 'http-probe';

function server(name: string) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/to-other') {
      res.writeHead(Number(url.searchParams.get('status') ?? 307), { location: `http://localhost:${portB}/echo` });
      res.end();
      return;
    }
    if (url.pathname === '/to-same') { res.writeHead(Number(url.searchParams.get('status') ?? 307), { location: '/echo' }); res.end(); return; }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ server: name, method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
  };
}

async function listen(s: Server): Promise<number> {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return (s.address() as AddressInfo).port;
}

beforeAll(async () => {
  first = createServer(server('A'));
  second = createServer(server('B'));
  portA = await listen(first);
  portB = await listen(second);
  t = await startTestKernel({ plugins: { privateNetworkHosts: [`${KEY}@localhost`] } });
  const folder = await variant('http-probe', (m) => ({ ...m, network: { allow: [`localhost:${portA}`, `localhost:${portB}`] } }));
  await installPlugin(t, folder);
  expect((await t.api.post(`/api/plugins/${KEY}/enable`, {})).status).toBe(200);
});

afterAll(async () => {
  await t?.stop();
  for (const s of [first, second]) { s?.closeAllConnections(); s?.close(); }
});

async function fetchVia(url: string, headers: Record<string, string>, body = '{}'): Promise<any> {
  const res = await t.api.post(`/api/plugins/${KEY}/fetch`, { url, init: { method: 'POST', headers, body } });
  expect(res.status, res.text).toBe(200);
  expect(res.body.ok, res.text).toBe(true);
  return JSON.parse(res.body.body);
}

const CREDENTIALS = {
  authorization: 'Bearer for-a-only', cookie: 'session=for-a-only', 'x-api-key': 'for-a-only', 'x-auth-token': 'for-a-only',
  'api-key': 'for-a-only', 'private-token': 'for-a-only', 'x-amz-security-token': 'for-a-only', 'x-vendor-signature': 'for-a-only',
};
const PLAIN = { accept: 'application/json', 'accept-language': 'en', 'content-type': 'application/json', 'user-agent': 'probe/1' };

describe('redirects between allow-listed hosts', () => {
  it('drops every header the plugin set except a few plain ones when a redirect changes origin', async () => {
    for (const status of [301, 302, 303, 307, 308]) {
      const seen = await fetchVia(`http://localhost:${portA}/to-other?status=${status}`, { ...CREDENTIALS, ...PLAIN });
      expect(seen.server, String(status)).toBe('B');
      for (const name of Object.keys(CREDENTIALS)) expect(seen.headers[name], `${status}: ${name}`).toBeUndefined();
      expect(JSON.stringify(seen.headers)).not.toContain('for-a-only');
      expect(seen.headers.accept).toBe('application/json');
      expect(seen.headers['user-agent']).toBe('probe/1');
    }
  });

  it('does not re-send the request body when a 307 or 308 changes origin', async () => {
    const body = JSON.stringify({ secret: 'body-for-a-only' });
    for (const status of [307, 308]) {
      const seen = await fetchVia(`http://localhost:${portA}/to-other?status=${status}`, { authorization: 'Bearer for-a-only', 'content-type': 'application/json' }, body);
      expect(seen.server, String(status)).toBe('B');
      expect(seen.method, String(status)).toBe('POST');
      expect(seen.body, String(status)).toBe('');
      expect(seen.headers.authorization, String(status)).toBeUndefined();
      expect(seen.headers['content-type'], String(status)).toBeUndefined();
      expect(JSON.stringify(seen)).not.toContain('for-a-only');
      // Within one origin the same redirect keeps the body, as HTTP intends.
      const same = await fetchVia(`http://localhost:${portA}/to-same?status=${status}`, { 'content-type': 'application/json' }, body);
      expect(same.server).toBe('A');
      expect(same.body).toBe(body);
      expect(same.headers['content-type']).toBe('application/json');
    }
  });

  it('keeps the plugin\'s headers on a redirect within one origin', async () => {
    const seen = await fetchVia(`http://localhost:${portA}/to-same`, { ...CREDENTIALS, ...PLAIN });
    expect(seen.server).toBe('A');
    expect(seen.headers['x-api-key']).toBe('for-a-only');
    expect(seen.headers.authorization).toBe('Bearer for-a-only');
  });
});
