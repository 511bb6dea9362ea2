import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../kernel/config/load.ts';
import { ServedHosts } from '../../kernel/http/served-hosts.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { createAgent, createCompany } from '../support/fixtures.ts';

const CONFORMANCE = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url));

interface Answer { status: number; body: any; headers: Record<string, string | string[] | undefined> }

/** A request with the exact Host and Origin a browser on a rebound name would send (fetch cannot set Host). */
function send(url: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const target = new URL(url);
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const outgoing = request({
      host: target.hostname, port: target.port, method, path,
      headers: { ...(text ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) } : {}), ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = raw;
        try { parsed = JSON.parse(raw); } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(text);
  });
}

let t: TestKernel;
let port: string;
let company: any;

beforeAll(async () => {
  t = await startTestKernel();
  port = new URL(t.url).port;
  company = await createCompany(t.api, { name: 'Rebind Co' });
});
afterAll(async () => { await t?.stop(); });

async function count(table: string, companyId = company.id): Promise<number> {
  const { rows } = await t.sql.query(`select count(*)::int as n from ${table} where company_id = $1`, [companyId]);
  return rows[0].n;
}

describe('Host: only names this instance serves', () => {
  it('refuses a DNS-rebound page driving the local board: no agent with a command is created, none is woken', async () => {
    const rebound = `attacker.example:${port}`;
    const headers = { host: rebound, origin: `http://${rebound}` };
    const agentsBefore = await count('agents');
    const hire = await send(t.url, 'POST', `/api/companies/${company.id}/agents`, headers, {
      name: 'Pwned', role: 'general', adapterType: 'process', adapterConfig: { command: 'touch', args: ['/tmp/pwned'] },
    });
    expect(hire.status).toBe(403);
    expect(hire.body).toMatchObject({ code: 'host_not_allowed', details: { setting: 'server.allowedHostnames (env KEEL_ALLOWED_HOSTNAMES)' } });
    expect(hire.body.error).toBe(`Host "${rebound}" is not a name this instance serves; to serve it, add "attacker.example" to server.allowedHostnames (env KEEL_ALLOWED_HOSTNAMES)`);
    expect(hire.body.requestId).toBe(hire.headers['x-request-id']);
    expect(await count('agents')).toBe(agentsBefore);

    const existing = await createAgent(t.api, company.id, { name: 'Existing' });
    const wake = await send(t.url, 'POST', `/api/agents/${existing.id}/wakeup`, headers, { source: 'on_demand' });
    expect(wake.status).toBe(403);
    expect(wake.body.code).toBe('host_not_allowed');
  });

  it('refuses reads too, on every surface: the API, /mcp, the console and plugin paths', async () => {
    for (const path of ['/api/health', `/api/companies/${company.id}`, '/api/companies', '/', '/index.html', '/api/plugins/anything/x']) {
      const answer = await send(t.url, 'GET', path, { host: `evil.example:${port}` });
      expect(answer.status, path).toBe(403);
      expect(answer.body.code, path).toBe('host_not_allowed');
    }
    const mcp = await send(t.url, 'POST', '/mcp', { host: 'evil.example', accept: 'application/json, text/event-stream' }, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    expect(mcp.status).toBe(403);
    expect(mcp.body.code).toBe('host_not_allowed');
  });

  it('serves loopback names on the listening port only', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST.:${port}`, `[::1]:${port}`]) {
      expect((await send(t.url, 'GET', '/api/health', { host })).status, host).toBe(200);
    }
    const otherPort = String(Number(port) === 65535 ? 1 : Number(port) + 1);
    for (const host of [`127.0.0.1:${otherPort}`, 'localhost', '127.0.0.1.nip.io:' + port, `localhost@evil.example:${port}`, `127.0.0.1:${port}:1`]) {
      const answer = await send(t.url, 'GET', '/api/health', { host });
      expect(answer.status, host).toBe(403);
      expect(answer.body.code).toBe('host_not_allowed');
    }
  });

  it('refuses a request without a Host header (HTTP/1.0) with the JSON error body', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.end('GET /api/health HTTP/1.0\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => { text += chunk.toString('utf8'); });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.[01] 403/);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'host_not_allowed', error: 'A request must name this instance in its Host header' });
  });
});

describe('Origin: no state change from another origin', () => {
  const host = () => `127.0.0.1:${port}`;

  it('refuses every non-GET method from a foreign origin and writes nothing', async () => {
    const before = await count('agents');
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const answer = await send(t.url, method, `/api/companies/${company.id}/agents`, { host: host(), origin: 'https://evil.example' }, method === 'OPTIONS' || method === 'DELETE' ? undefined : { name: 'Nope' });
      expect(answer.status, method).toBe(403);
      expect(answer.body, method).toMatchObject({ code: 'origin_not_allowed', details: { setting: 'server.allowedHostnames (env KEEL_ALLOWED_HOSTNAMES)' } });
    }
    const post = await send(t.url, 'POST', `/api/companies/${company.id}/agents`, { host: host(), origin: 'https://evil.example' }, { name: 'Nope' });
    expect(post.body.error).toBe('Origin "https://evil.example" may not send POST requests to this instance; to allow it, add "evil.example" to server.allowedHostnames (env KEEL_ALLOWED_HOSTNAMES)');
    expect(await count('agents')).toBe(before);
  });

  it('refuses an opaque origin, a loopback origin on another port and a non-web scheme', async () => {
    for (const origin of ['null', `http://localhost:${Number(port) + 1}`, 'http://localhost', `file://localhost:${port}`, 'not a url']) {
      const answer = await send(t.url, 'POST', '/api/companies', { host: host(), origin }, { name: 'Nope' });
      expect(answer.status, origin).toBe(403);
      expect(answer.body.code, origin).toBe('origin_not_allowed');
    }
  });

  it('lets GET through from any origin (no CORS answer lets the page read it) and accepts its own pages', async () => {
    const read = await send(t.url, 'GET', `/api/companies/${company.id}`, { host: host(), origin: 'https://evil.example' });
    expect(read.status).toBe(200);
    expect(read.headers['access-control-allow-origin']).toBeUndefined();
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]) {
      const created = await send(t.url, 'POST', '/api/companies', { host: host(), origin }, { name: `From ${origin}` });
      expect(created.status, origin).toBe(201);
    }
  });
});

describe('operator-listed names and the public base URL', () => {
  let listed: TestKernel;
  afterAll(async () => { await listed?.stop(); });

  it('serves names in server.allowedHostnames on any port, and the public base URL host', async () => {
    listed = await startTestKernel({ server: { allowedHostnames: ['keel.internal', '[fd00::1]'] }, deploymentMode: 'authenticated', auth: { baseUrlMode: 'explicit', publicBaseUrl: 'https://keel.example.com' } });
    for (const hostHeader of ['keel.internal', 'KEEL.internal:8443', '[fd00::1]:3100', 'keel.example.com', 'keel.example.com:443']) {
      expect((await send(listed.url, 'GET', '/api/health', { host: hostHeader })).status, hostHeader).toBe(200);
    }
    expect((await send(listed.url, 'GET', '/api/health', { host: 'evil.keel.internal' })).status).toBe(403);
    // A listed origin passes the origin check and reaches authentication.
    const signUp = await send(listed.url, 'POST', '/api/auth/sign-in', { host: 'keel.example.com', origin: 'https://keel.example.com' }, { email: 'nobody@example.com', password: 'wrong-password' });
    expect(signUp.body.code).not.toBe('origin_not_allowed');
    expect(signUp.body.code).not.toBe('host_not_allowed');
  });

  it('reads KEEL_ALLOWED_HOSTNAMES and refuses a malformed name naming the setting', () => {
    const config = loadConfig({ env: { KEEL_ALLOWED_HOSTNAMES: 'a.example, b.example', KEEL_HOME: tmpdir() } });
    expect(config.server.allowedHostnames).toEqual(['a.example', 'b.example']);
    expect(() => loadConfig({ env: { KEEL_ALLOWED_HOSTNAMES: 'evil.example:80', KEEL_HOME: tmpdir() } })).toThrow(/server\.allowedHostnames/);
    expect(() => loadConfig({ env: { KEEL_ALLOWED_HOSTNAMES: 'http://x', KEEL_HOME: tmpdir() } })).toThrow(/server\.allowedHostnames/);
  });

  it('treats every interface address as bound when the server binds all interfaces', () => {
    const served = new ServedHosts({ bindHost: '0.0.0.0', port: 3100 });
    expect(served.servesHost('127.0.0.1:3100')).toBe(true);
    expect(served.servesHost('evil.example:3100')).toBe(false);
    const narrow = new ServedHosts({ bindHost: '127.0.0.1', port: 3100 });
    expect(narrow.servesHost('10.1.2.3:3100')).toBe(false);
  });
});

describe('the MCP conformance scenario dns-rebinding-protection', () => {
  it('passes against /mcp in local_trusted mode', async () => {
    const output = await mkdtemp(join(tmpdir(), 'keel-conformance-'));
    try {
      const run = await promisify(execFile)(process.execPath, [CONFORMANCE, 'server', '--url', `${t.url}/mcp`, '--scenario', 'dns-rebinding-protection', '--output-dir', output], { timeout: 60_000 })
        .then(({ stdout }) => ({ code: 0, stdout }), (error: { code?: number; stdout?: string }) => ({ code: error.code ?? 1, stdout: error.stdout ?? '' }));
      const checks = await readChecks(output);
      expect(checks.map((check) => [check.id, check.status])).toEqual([
        ['localhost-host-rebinding-rejected', 'SUCCESS'],
        ['localhost-host-valid-accepted', 'SUCCESS'],
      ]);
      expect(run.code, run.stdout).toBe(0);
    } finally {
      await rm(output, { recursive: true, force: true });
    }
  });
});

/** The scenario writes checks.json under a folder of its own inside the output directory. */
async function readChecks(dir: string): Promise<Array<{ id: string; status: string }>> {
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name === 'checks.json') return JSON.parse(await readFile(join(entry.parentPath, entry.name), 'utf8'));
  }
  throw new Error(`no checks.json under ${dir}`);
}
