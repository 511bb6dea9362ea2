import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressAllowed, canonicalIp, classifyAddress, parseIPv4 } from '../../kernel/net/address-policy.ts';
import { parseFetchArgs } from '../../kernel/host/capabilities/http-fetch/fetch-request.ts';
import { fetchPolicy, performFetch } from '../../kernel/host/capabilities/http-fetch/worker.ts';
import type { Resolver } from '../../kernel/net/resolver.ts';
import { AllowList, parseAllowEntry } from '../../kernel/net/allow-list.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * ctx.http.fetch against real local HTTP servers. Loopback is refused by policy, so the
 * `http-probe` plugin reaches `localhost` only through the operator's private-network
 * allowance (configuration plugins.privateNetworkHosts). `http-strict` has no allowance for
 * its loopback hosts (and an allowance for metadata hosts, which must not help): every
 * spelling of a local, private or metadata address must fail closed there.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/http-probe', import.meta.url));
let t: TestKernel;
let work: string;
let portA: number;
let portB: number;
let serverA: Server;
let serverB: Server;
const hits: string[] = [];

function handler(name: string) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      hits.push(`${name}${url.pathname}`);
      const to = (location: string, status = 302) => { res.writeHead(status, { location }); res.end(); };
      switch (url.pathname) {
        case '/hello': res.writeHead(200, { 'content-type': 'text/plain', 'X-Test': 'One', 'set-cookie': ['a=1', 'b=2'] }); res.end('hello'); return;
        case '/echo': res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ server: name, method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString() })); return;
        case '/chain': {
          const n = Number(url.searchParams.get('n'));
          return n > 0 ? to(`/chain?n=${n - 1}`) : to('/hello');
        }
        case '/loop': return to('/loop');
        case '/to-b': return to(`http://localhost:${portB}/echo`, 307);
        case '/see-other': return to('/echo', 303);
        case '/out-ip': return to(`http://127.0.0.1:${portA}/secret`);
        case '/out-port': return to('http://localhost:1/secret');
        case '/out-metadata': return to('http://169.254.169.254/latest/meta-data/');
        case '/out-file': return to('file:///etc/passwd');
        case '/to-name': return to(`http://b.test:${portA}/hello`);
        case '/out-decimal': return to(`http://2130706433:${portA}/secret`);
        case '/big': res.writeHead(200); res.end(Buffer.alloc(6 * 1024 * 1024, 97)); return;
        case '/bomb': res.writeHead(200, { 'content-encoding': 'gzip' }); res.end(gzipSync(Buffer.alloc(64 * 1024 * 1024))); return;
        case '/gzip': res.writeHead(200, { 'content-encoding': 'gzip' }); res.end(gzipSync('compressed hello')); return;
        case '/slow': setTimeout(() => { res.writeHead(200); res.end('late'); }, 8000).unref(); return;
        default: res.writeHead(404); res.end('nothing');
      }
    });
  };
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Installs a copy of the fixture under another key and allow-list, and enables it. */
async function installVariant(key: string, allow: string[]): Promise<void> {
  const folder = join(work, key);
  await cp(FIXTURE, folder, { recursive: true });
  const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
  await writeFile(join(folder, 'plugin.json'), JSON.stringify({ ...manifest, key, network: { allow } }));
  const installed = await t.api.post('/api/plugins/install', { localPath: folder });
  expect(installed.status, installed.text).toBe(201);
  const enabled = await t.api.post(`/api/plugins/${key}/enable`, {});
  expect(enabled.status, enabled.text).toBe(200);
}

async function probe(key: string, url: string, init?: Record<string, unknown>): Promise<any> {
  const res = await t.api.post(`/api/plugins/${key}/fetch`, { url, init });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

beforeAll(async () => {
  serverA = createServer(handler('A'));
  serverB = createServer(handler('B'));
  portA = await listen(serverA);
  portB = await listen(serverB);
  work = await mkdtemp(join(tmpdir(), 'keel-http-fetch-'));
  t = await startTestKernel({
    limits: { jsonBodyBytes: 4 * 1024 * 1024 },
    plugins: { privateNetworkHosts: ['http-probe@localhost', 'http-strict@169.254.169.254', 'http-strict@metadata.google.internal', 'http-strict@0.0.0.0'] },
  });
  await installVariant('http-probe', [`localhost:${portA}`, `localhost:${portB}`]);
  await installVariant('http-strict', [
    `localhost:${portA}`, `127.0.0.1:${portA}`, '169.254.169.254', 'metadata.google.internal', `0.0.0.0:${portA}`,
    '10.0.0.1', '192.168.1.1', '172.16.0.1', '100.64.0.1', '198.18.0.1', '224.0.0.1', '255.255.255.255',
  ]);
});

afterAll(async () => {
  await t?.stop();
  serverA?.closeAllConnections(); serverA?.close();
  serverB?.closeAllConnections(); serverB?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('legitimate fetches (allow-listed host, operator allowance for loopback)', () => {
  it('returns status, lower-cased string headers and the body as text', async () => {
    const out = await probe('http-probe', `http://localhost:${portA}/hello`);
    expect(out).toMatchObject({ ok: true, status: 200, body: 'hello' });
    expect(out.headers['x-test']).toBe('One');
    expect(out.headers['set-cookie']).toBe('a=1, b=2');
    expect(Object.keys(out.headers).every((name: string) => name === name.toLowerCase())).toBe(true);
    expect(Object.values(out.headers).every((value) => typeof value === 'string')).toBe(true);
  });

  it('matches the allow-list case-insensitively and without a trailing dot', async () => {
    expect(await probe('http-probe', `http://LocalHost.:${portA}/hello`)).toMatchObject({ ok: true, status: 200, body: 'hello' });
  });

  it('sends method, body and the plugin headers, but strips host-controlled and hop-by-hop headers', async () => {
    const out = await probe('http-probe', `http://localhost:${portA}/echo`, {
      method: 'post', body: '{"a":1}',
      headers: { 'Content-Type': 'application/json', 'X-Custom': 'v', Host: 'evil.example', Connection: 'keep-alive, x-custom', 'Proxy-Authorization': 'Basic x', 'Transfer-Encoding': 'chunked', 'Content-Length': '999', 'Accept-Encoding': 'gzip', TE: 'trailers', Upgrade: 'h2c' },
    });
    expect(out.ok).toBe(true);
    const echoed = JSON.parse(out.body);
    expect(echoed.method).toBe('POST');
    expect(echoed.body).toBe('{"a":1}');
    expect(echoed.headers).toMatchObject({ host: `localhost:${portA}`, 'x-custom': 'v', 'content-type': 'application/json', 'content-length': '7' });
    for (const name of ['proxy-authorization', 'transfer-encoding', 'accept-encoding', 'te', 'upgrade']) expect(echoed.headers[name], name).toBeUndefined();
    expect(echoed.headers.connection).not.toContain('x-custom');
  });

  it('follows redirects inside the allow-list, up to five', async () => {
    expect(await probe('http-probe', `http://localhost:${portA}/chain?n=4`)).toMatchObject({ ok: true, status: 200, body: 'hello' });
    const tooMany = await probe('http-probe', `http://localhost:${portA}/loop`);
    expect(tooMany).toMatchObject({ ok: false, error: { status: 502, code: 'too_many_redirects' } });
  });

  it('turns a 303 into a GET and drops the plugin\'s own headers (Authorization or any other) on a cross-origin redirect', async () => {
    const seeOther = await probe('http-probe', `http://localhost:${portA}/see-other`, { method: 'POST', body: 'x' });
    expect(JSON.parse(seeOther.body)).toMatchObject({ method: 'GET', body: '' });
    const cross = await probe('http-probe', `http://localhost:${portA}/to-b`, { method: 'PUT', body: 'meant-for-a', headers: { Authorization: 'Bearer secret', 'X-Dropped': '1', Accept: 'text/plain', 'Content-Type': 'text/plain' } });
    const echoed = JSON.parse(cross.body);
    // The 307 keeps the method; the body, written for A, does not go on to B (nor its Content-Type).
    expect(echoed).toMatchObject({ server: 'B', method: 'PUT', body: '' });
    expect(echoed.headers['content-type']).toBeUndefined();
    expect(echoed.headers.authorization).toBeUndefined();
    expect(echoed.headers['x-dropped']).toBeUndefined();
    expect(echoed.headers.accept).toBe('text/plain');
  });

  it('decodes compressed bodies', async () => {
    expect(await probe('http-probe', `http://localhost:${portA}/gzip`)).toMatchObject({ ok: true, body: 'compressed hello' });
  });
});

describe('bounds', () => {
  it('refuses responses over 5 MiB, also when they arrive compressed', async () => {
    expect(await probe('http-probe', `http://localhost:${portA}/big`)).toMatchObject({ ok: false, error: { status: 502, code: 'response_too_large' } });
    expect(await probe('http-probe', `http://localhost:${portA}/bomb`)).toMatchObject({ ok: false, error: { status: 502, code: 'response_too_large' } });
  });

  it('refuses request bodies over 1 MiB', async () => {
    const out = await probe('http-probe', `http://localhost:${portA}/echo`, { method: 'POST', body: 'x'.repeat(1024 * 1024 + 1) });
    expect(out).toMatchObject({ ok: false, error: { status: 413, code: 'request_too_large' } });
  });

  it('times out at timeoutMs, and by default before the call deadline (the worker survives)', async () => {
    let started = Date.now();
    expect(await probe('http-probe', `http://localhost:${portA}/slow`, { timeoutMs: 300 })).toMatchObject({ ok: false, error: { status: 504, code: 'fetch_timeout' } });
    expect(Date.now() - started).toBeLessThan(2000);
    // timeoutMs beyond the call deadline (4 s in the fixture) is capped: the fetch fails, not the call.
    started = Date.now();
    expect(await probe('http-probe', `http://localhost:${portA}/slow`, { timeoutMs: 60_000 })).toMatchObject({ ok: false, error: { status: 504, code: 'fetch_timeout' } });
    expect(Date.now() - started).toBeLessThan(7000);
    const health = await t.api.get('/api/plugins/http-probe/health');
    expect(health.body.worker.restarts).toBe(0);
  }, 20_000);

  it('validates the request before touching the network', async () => {
    const cases: Array<[Record<string, unknown> | undefined, string, string]> = [
      [{ method: 'CONNECT' }, 'invalid_request', 'method'],
      [{ method: 'TRACE' }, 'invalid_request', 'method'],
      [{ headers: { 'X-Bad': 'a\r\nInjected: 1' } }, 'invalid_request', 'line break'],
      [{ headers: { 'Bad Name': 'x' } }, 'invalid_request', 'header name'],
      [{ headers: { 'X-Num': 1 } }, 'invalid_request', 'string'],
      [{ body: 'x' }, 'invalid_request', 'GET request cannot have a body'],
      [{ method: 'POST', body: { a: 1 } }, 'invalid_request', 'body must be a string'],
      [{ timeoutMs: -1 }, 'invalid_request', 'timeoutMs'],
    ];
    const before = hits.length;
    for (const [init, code, text] of cases) {
      const out = await probe('http-probe', `http://localhost:${portA}/echo`, init);
      expect(out, JSON.stringify(init)).toMatchObject({ ok: false, error: { status: 400, code } });
      expect(out.error.message).toContain(text);
    }
    expect(hits.length).toBe(before);
  });

  it('accepts plain data only as fetch options: getters and setters are refused without running, nothing is sent', async () => {
    const before = hits.length;
    for (const [shape, text] of [
      ['getter', 'an accessor (get method or set method) at options'],
      ['setter', 'an accessor (get method or set method) at options'],
      ['nested-getter', 'an accessor (get authorization or set authorization) at options.headers'],
      ['function', 'a function at options.headers'],
      ['instance', 'a Map at options.headers'],
      ['symbol', 'a symbol-keyed property at options'],
    ] as const) {
      const res = await t.api.post('/api/plugins/http-probe/fetch', { url: `http://localhost:${portA}/echo`, shape });
      expect(res.status, res.text).toBe(200);
      expect(res.body, shape).toMatchObject({ ok: false, error: { status: 400, code: 'invalid_arguments' }, touched: [] });
      expect(res.body.error.message, shape).toContain(`ctx.http.fetch: ${text}`);
    }
    expect(hits.length, 'nothing reached the server').toBe(before);
    // A Proxy passes as its target's plain data: what is sent is a copy, and its get trap never runs.
    const proxied = await t.api.post('/api/plugins/http-probe/fetch', { url: `http://localhost:${portA}/echo`, shape: 'proxy' });
    expect(proxied.body).toMatchObject({ ok: true, touched: [] });
    expect(JSON.parse(proxied.body.body)).toMatchObject({ method: 'POST', body: 'from-the-target' });
    const logs = (await t.api.get('/api/plugins/http-probe/logs?limit=200')).body.logs as Array<{ message: string }>;
    expect(logs.filter((line) => line.message.startsWith('getter ran'))).toEqual([]);
  });
});

describe('SSRF attempts fail closed', () => {
  it('refuses loopback, private and metadata targets and every numeric spelling of them', async () => {
    const p = portA;
    const attempts: Array<[string, string, string]> = [
      ['http-strict', `http://localhost:${p}/hello`, 'address_denied'],
      ['http-strict', `http://LOCALHOST.:${p}/hello`, 'address_denied'],
      ['http-strict', `http://127.0.0.1:${p}/hello`, 'address_denied'],
      ['http-strict', `http://127.0.0.1.:${p}/hello`, 'address_denied'],
      ['http-strict', `http://2130706433:${p}/hello`, 'address_denied'],
      ['http-strict', `http://0177.0.0.1:${p}/hello`, 'address_denied'],
      ['http-strict', `http://0x7f.1:${p}/hello`, 'address_denied'],
      ['http-strict', `http://0x7f000001:${p}/hello`, 'address_denied'],
      ['http-strict', `http://017700000001:${p}/hello`, 'address_denied'],
      ['http-strict', `http://127.1:${p}/hello`, 'address_denied'],
      ['http-strict', `http://0.0.0.0:${p}/hello`, 'address_denied'],
      ['http-strict', 'http://169.254.169.254/latest/meta-data/', 'address_denied'],
      ['http-strict', 'http://0xa9.0xfe.0xa9.0xfe/latest/meta-data/', 'address_denied'],
      ['http-strict', 'http://2852039166/latest/meta-data/', 'address_denied'],
      ['http-strict', 'http://metadata.google.internal/computeMetadata/v1/', 'address_denied'],
      ['http-strict', 'http://10.0.0.1/', 'address_denied'],
      ['http-strict', 'http://012.0.0.1/', 'address_denied'],
      ['http-strict', 'http://192.168.1.1/', 'address_denied'],
      ['http-strict', 'http://172.16.0.1/', 'address_denied'],
      ['http-strict', 'http://100.64.0.1/', 'address_denied'],
      ['http-strict', 'http://198.18.0.1/', 'address_denied'],
      ['http-strict', 'http://224.0.0.1/', 'address_denied'],
      ['http-strict', 'http://255.255.255.255/', 'address_denied'],
      ['http-strict', `http://[::1]:${p}/hello`, 'network_denied'],
      ['http-strict', `http://[::ffff:127.0.0.1]:${p}/hello`, 'network_denied'],
      ['http-strict', 'http://[fd00:ec2::254]/latest/meta-data/', 'network_denied'],
      ['http-probe', `http://127.0.0.1:${p}/hello`, 'network_denied'],
      ['http-probe', `http://2130706433:${p}/hello`, 'network_denied'],
      ['http-probe', `http://localhost:1/hello`, 'network_denied'],
      ['http-probe', 'http://localhost/hello', 'network_denied'],
      ['http-probe', `http://localhost.evil.example:${p}/hello`, 'network_denied'],
      ['http-probe', `http://evil.example/?localhost:${p}`, 'network_denied'],
      ['http-probe', 'file:///etc/passwd', 'network_denied'],
      ['http-probe', `ftp://localhost:${p}/hello`, 'network_denied'],
      ['http-probe', `gopher://localhost:${p}/_hello`, 'network_denied'],
      ['http-probe', `http://user:pass@localhost:${p}/hello`, 'invalid_url'],
      ['http-probe', `http://localhost:${p}@127.0.0.1:${p}/hello`, 'invalid_url'],
      ['http-probe', 'not a url', 'invalid_url'],
    ];
    const before = hits.length;
    for (const [plugin, url, code] of attempts) {
      const out = await probe(plugin, url);
      expect(out.ok, `${plugin} ${url}`).toBe(false);
      expect(out.error.code, `${plugin} ${url}: ${out.error.message}`).toBe(code);
      expect([400, 403]).toContain(out.error.status);
    }
    // Not one of them reached a server.
    expect(hits.length).toBe(before);
  }, 30_000);

  it('keeps metadata and unspecified addresses closed even when an operator allowance names them', async () => {
    const out = await probe('http-strict', 'http://169.254.169.254/latest/meta-data/');
    expect(out.error.message).toContain('cloud metadata');
    const unspecified = await probe('http-strict', `http://0.0.0.0:${portA}/hello`);
    expect(unspecified.error.message).toContain('unspecified');
  });

  it('names the fix for an overridable refusal, and reveals no host internals', async () => {
    const out = await probe('http-strict', `http://localhost:${portA}/hello`);
    expect(out.error.message).toContain('plugins.privateNetworkHosts');
    expect(out.error.message).not.toContain('127.0.0.1');
    expect(out.error.stack).not.toMatch(/worker-main|plugin-worker|node_modules|node:internal|\/work\//);
  });

  it('refuses a redirect that leaves the allow-list, at every hop', async () => {
    const before = hits.filter((hit) => hit.endsWith('/secret')).length;
    for (const path of ['/out-ip', '/out-port', '/out-metadata', '/out-file', '/out-decimal']) {
      const out = await probe('http-probe', `http://localhost:${portA}${path}`);
      expect(out, path).toMatchObject({ ok: false, error: { status: 403, code: 'redirect_denied' } });
    }
    expect(hits.filter((hit) => hit.endsWith('/secret')).length).toBe(before);
  });
});

describe('address policy (module)', () => {
  it('parses every inet_aton spelling of an address', () => {
    for (const text of ['127.0.0.1', '2130706433', '0177.0.0.1', '0x7f.1', '0x7f.0.0.1', '127.1', '0x7f000001', '017700000001', '127.0.0.1.']) {
      expect(parseIPv4(text), text).toEqual([127, 0, 0, 1]);
    }
    for (const text of ['08.0.0.1', '256.0.0.1', '1.2.3.4.5', '4294967296', 'example', '']) expect(parseIPv4(text), text).toBeNull();
    expect(canonicalIp('[::ffff:127.0.0.1]')).toBe('::ffff:7f00:1');
    expect(canonicalIp('fe80::1%eth0')).toBe('fe80::1');
    expect(canonicalIp('0:0:0:0:0:0:0:1')).toBe('::1');
  });

  it('classifies special ranges, IPv4-mapped/translated/NAT64 forms and metadata addresses', () => {
    const table: Record<string, string> = {
      '127.0.0.1': 'loopback', '127.255.0.9': 'loopback', '::1': 'loopback', '10.1.2.3': 'private', '172.31.255.255': 'private',
      '192.168.0.1': 'private', '169.254.1.1': 'link_local', 'fe80::1': 'link_local', 'fc00::1': 'unique_local', 'fd12:3456::1': 'unique_local',
      '100.64.0.1': 'carrier_grade_nat', '198.19.255.255': 'benchmark', '224.0.0.251': 'multicast', 'ff02::1': 'multicast',
      '0.0.0.0': 'unspecified', '::': 'unspecified', '255.255.255.255': 'broadcast', '240.0.0.1': 'reserved', '192.0.2.5': 'documentation',
      '2001:db8::1': 'documentation', '169.254.169.254': 'metadata', 'fd00:ec2::254': 'metadata', '100.100.100.200': 'metadata',
      '::ffff:127.0.0.1': 'loopback', '::ffff:10.0.0.1': 'private', '::ffff:169.254.169.254': 'metadata', '::ffff:0:127.0.0.1': 'loopback',
      '64:ff9b::127.0.0.1': 'loopback', '64:ff9b::a9fe:a9fe': 'metadata', '::127.0.0.1': 'reserved', '2002:7f00:1::': 'reserved',
      '2001::1': 'reserved', '::ffff:8.8.8.8': 'public', '8.8.8.8': 'public', '2606:4700::1111': 'public', 'not-an-ip': 'reserved',
    };
    for (const [address, cls] of Object.entries(table)) expect(classifyAddress(address), address).toBe(cls);
  });

  it('lets the operator allowance open private ranges but never metadata, multicast or unspecified space', () => {
    expect(addressAllowed('127.0.0.1', false).allowed).toBe(false);
    expect(addressAllowed('127.0.0.1', true).allowed).toBe(true);
    expect(addressAllowed('10.0.0.1', true).allowed).toBe(true);
    for (const address of ['169.254.169.254', 'fd00:ec2::254', '0.0.0.0', '224.0.0.1', '255.255.255.255', '240.0.0.1']) {
      expect(addressAllowed(address, true).allowed, address).toBe(false);
    }
  });

  it('normalises allow-list entries: case, trailing dot, IDN, numeric hosts, wildcards and ports', () => {
    expect(parseAllowEntry('API.Example.com.:8443')).toEqual({ host: 'api.example.com', wildcard: false, ip: false, port: 8443 });
    expect(parseAllowEntry('bücher.de')).toMatchObject({ host: 'xn--bcher-kva.de' });
    expect(parseAllowEntry('2130706433')).toMatchObject({ host: '127.0.0.1', ip: true });
    expect(parseAllowEntry('*.127.0.0.1')).toBeNull();
    expect(parseAllowEntry('example.com:99999')).toBeNull();
    const list = new AllowList(['*.example.com', 'api.other.org:8080', 'xn--bcher-kva.de']);
    expect(list.matches('a.b.example.com', 443)).toHaveLength(1);
    expect(list.matches('example.com', 443)).toHaveLength(0);
    expect(list.matches('evilexample.com', 443)).toHaveLength(0);
    expect(list.matches('a.example.com', 8443)).toHaveLength(0);
    expect(list.matches('api.other.org', 8080)).toHaveLength(1);
    expect(list.matches('api.other.org', 443)).toHaveLength(0);
    expect(list.explicitlyAllows('a.example.com', 443)).toBe(false);
    expect(list.matches(new URL('http://BÜCHER.de/').hostname, 80)).toHaveLength(1);
  });
});

describe('resolution and pinning (module, with a scripted resolver)', () => {
  const scripted = (answers: string[][]) => {
    const calls: string[] = [];
    const resolve: Resolver = async (host) => {
      calls.push(host);
      const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
      return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    return { resolve, calls };
  };
  const run = (allow: string[], privateHosts: string[], resolve: Resolver, url: string, init?: Record<string, unknown>) =>
    performFetch(fetchPolicy({ network: allow, privateNetworkHosts: privateHosts }, resolve), parseFetchArgs([url, init]), 3000);

  it('refuses a name when ANY of its addresses is private', async () => {
    const { resolve } = scripted([['8.8.8.8', '10.0.0.5']]);
    await expect(run(['mixed.test'], [], resolve, 'http://mixed.test/')).rejects.toMatchObject({ code: 'address_denied' });
  });

  // The system resolver knows no *.test name: a success here proves the connection used the checked answer.
  it('applies the allowance only to a host named exactly, not through a wildcard', async () => {
    const { resolve } = scripted([['127.0.0.1']]);
    await expect(run([`*.corp.test:${portA}`], ['api.corp.test'], resolve, `http://api.corp.test:${portA}/hello`)).rejects.toMatchObject({ code: 'address_denied' });
    const ok = await run([`api.corp.test:${portA}`], ['api.corp.test'], resolve, `http://api.corp.test:${portA}/hello`);
    expect(ok).toMatchObject({ status: 200, body: 'hello' });
  });

  it('connects to the checked address: a second, rebound answer is never used', async () => {
    const { resolve, calls } = scripted([['8.8.8.8'], ['127.0.0.1']]);
    const before = hits.length;
    await expect(run([`rebind.test:${portA}`], ['rebind.test'], resolve, `http://rebind.test:${portA}/hello`, { timeoutMs: 400 }))
      .rejects.toMatchObject({ code: expect.stringMatching(/^fetch_(timeout|failed)$/) });
    expect(calls).toEqual(['rebind.test']);
    expect(hits.length).toBe(before);
  });

  it('re-resolves and re-checks each redirect hop', async () => {
    const refused = scripted([['127.0.0.1']]);
    await expect(run([`a.test:${portA}`, `b.test:${portA}`], ['a.test'], refused.resolve, `http://a.test:${portA}/to-name`)).rejects.toMatchObject({ code: 'redirect_denied' });
    expect(refused.calls).toEqual(['a.test', 'b.test']);
    const allowed = scripted([['127.0.0.1']]);
    expect(await run([`a.test:${portA}`, `b.test:${portA}`], ['a.test', 'b.test'], allowed.resolve, `http://a.test:${portA}/to-name`)).toMatchObject({ status: 200, body: 'hello' });
    expect(allowed.calls).toEqual(['a.test', 'b.test']);
  });
});
