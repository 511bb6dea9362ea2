import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestHost, dbError, InvalidManifestError, PluginCallError, type TestHost } from '../../sdk/testing/index.ts';

const FIXTURE = fileURLToPath(new URL('../host/fixtures/sdk-harness', import.meta.url));
const COMPANY = '00000000-0000-4000-8000-00000000000a';
const OTHER = '00000000-0000-4000-8000-00000000000b';
let host: TestHost;

beforeAll(async () => {
  host = await createTestHost(FIXTURE, { config: { mode: 'test' } });
});
afterAll(() => host?.dispose());
afterEach(() => { host.db.reset(); host.http.reset(); });

describe('createTestHost', () => {
  it('runs the bundle in an isolate with every declared capability granted by default', async () => {
    const answer = await host.callRoute('whoami');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      granted: ['activity', 'agents', 'config', 'db', 'folders', 'http', 'invocation', 'log', 'progress'],
      config: { mode: 'test' },
      invocation: { kind: 'route', target: 'whoami', companyId: null, actor: { type: 'user', id: 'test-board', agentId: null }, runId: null },
    });
    expect(host.grants).toContain('webhooks.receive');
  });

  it('leaves an ungranted capability out of ctx', async () => {
    const limited = await createTestHost(FIXTURE, { grants: ['http.routes', 'database.namespace.read'] });
    try {
      expect((await limited.callRoute('whoami')).body).toMatchObject({ granted: ['config', 'db', 'invocation', 'log'] });
      const fetched = await limited.callRoute('fetch', { body: { url: 'https://api.example.com/x' } });
      expect(fetched.status).toBe(500);
      expect(fetched.body).toMatchObject({ code: 'plugin_error', error: expect.stringContaining("reading 'fetch'") });
      // A read-only grant gets PostgreSQL's permission error on writes, as the runtime role would.
      const written = await limited.callRoute('sql', { body: { sql: 'insert into notes (text) values (1)' } });
      expect(written.status).toBe(403);
      expect(written.body).toMatchObject({ code: 'sql_42501' });
      await expect(limited.callTool('sum', { numbers: [1] })).rejects.toMatchObject({ status: 404, code: 'tool_not_found' });
      expect(await limited.dispatchEvent('company.created', { companyId: COMPANY })).toBe(false);
    } finally {
      limited.dispose();
    }
  });

  it('refuses the capability at the bridge too, when plugin code calls it directly', async () => {
    const limited = await createTestHost(FIXTURE, { grants: ['http.routes'] });
    try {
      const answer = await limited.callRoute('bridge', { body: { capability: 'http', method: 'fetch' } });
      expect(answer.body).toEqual({ e: { status: 403, code: 'capability_denied', message: 'sdk-harness: ctx.http.fetch needs http.fetch, which is not granted; declare it under capabilities in sdk-harness/plugin.json, then grant it: keel plugin upgrade sdk-harness --grant http.fetch' } });
      expect(limited.logs).toContainEqual(expect.objectContaining({ level: 'warn', message: 'denied http.fetch: not granted' }));
      const unknown = await limited.callRoute('bridge', { body: { capability: 'secretz', method: 'x' } });
      expect(unknown.body).toMatchObject({ e: { code: 'unknown_capability' } });
    } finally {
      limited.dispose();
    }
  });

  it('does not mount routes without http.routes', async () => {
    const bare = await createTestHost(FIXTURE, { grants: ['tools.register'] });
    try {
      const answer = await bare.callRoute('whoami');
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ code: 'not_found' });
      expect(await bare.callTool('sum', { numbers: [2, 3] })).toEqual({ total: 5 });
    } finally {
      bare.dispose();
    }
  });

  it('refuses grants the manifest does not declare, and configuration its schema refuses', async () => {
    await expect(createTestHost(FIXTURE, { grants: ['secrets.resolve'] })).rejects.toMatchObject({ status: 422, code: 'capability_not_declared' });
    await expect(createTestHost(fileURLToPath(new URL('../../examples/greeting-panel', import.meta.url)), { config: { salutation: '' } }))
      .rejects.toMatchObject({ code: 'invalid_plugin_config', message: 'Invalid plugin configuration: salutation must NOT have fewer than 1 characters' });
  });

  it('reports every manifest issue before building', async () => {
    const work = await mkdtemp(join(tmpdir(), 'keel-testing-'));
    try {
      await cp(FIXTURE, join(work, 'broken'), { recursive: true });
      const manifest = JSON.parse(await readFile(join(work, 'broken', 'plugin.json'), 'utf8'));
      manifest.capabilities = manifest.capabilities.filter((c: { id: string }) => c.id !== 'http.routes');
      await writeFile(join(work, 'broken', 'plugin.json'), JSON.stringify(manifest));
      const error = await createTestHost(join(work, 'broken')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidManifestError);
      expect((error as InvalidManifestError).issues).toContainEqual({ path: 'routes', message: 'needs the http.routes capability; declare it under capabilities' });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});

describe('routes', () => {
  it('validates query and body before the isolate, with defaults and coercion', async () => {
    host.db.on('insert into notes', () => [{ id: '7' }]);
    const answer = await host.callRoute('notes', { params: { companyId: COMPANY }, query: { dryRun: 'true' }, body: { text: 'hi' } });
    expect(answer).toEqual({ status: 201, body: { id: 7, text: 'hi', tags: [], query: { dryRun: true } }, headers: {} });
    expect(host.db.queries).toEqual([{ sql: 'insert into notes (company_id, text, tags) values ($1, $2, $3) returning id', params: [COMPANY, 'hi', '[]'], invocationId: expect.any(String) }]);
    const refused = await host.callRoute('notes', { params: { companyId: COMPANY }, body: { tags: [1] } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'validation_failed', error: 'Invalid request body: text is required (and 1 more)', issues: [{ path: 'text', message: 'is required' }, { path: 'tags.0', message: 'must be string' }] });
    expect(host.db.queries).toHaveLength(1);
  });

  it('records activity with the identity the host attached, sanitised', async () => {
    host.db.on(/^insert into notes/, () => [{ id: '8' }]);
    const before = host.activity.length;
    await host.callRoute('notes', { params: { companyId: COMPANY }, body: { text: 'x', tags: ['a'] }, actor: { type: 'agent', id: 'agent-1', agentId: 'agent-1' }, runId: 'run-1' });
    expect(host.activity.slice(before)).toEqual([{
      action: 'sdk-harness.note_created', entityType: 'note', entityId: '8', details: { tags: ['a'], apiKey: '[REDACTED]' },
      companyId: COMPANY, actor: { type: 'agent', id: 'agent-1', agentId: 'agent-1' }, runId: 'run-1', invocationId: expect.any(String), byHost: false,
    }]);
  });

  it('drops the activity of a failed transactional call, and answers with the plugin\'s error', async () => {
    host.db.on(/^insert into notes/, () => []);
    const before = host.activity.length;
    const answer = await host.callRoute('write-then-fail', { params: { companyId: COMPANY } });
    expect(answer).toEqual({ status: 409, body: { error: 'Failing after a write', code: 'deliberate_failure' }, headers: {} });
    expect(host.activity.length).toBe(before);
    expect(host.db.queries).toHaveLength(1);
  });

  it('passes respond() status and the forwardable headers only', async () => {
    expect(await host.callRoute('respond')).toEqual({ status: 202, body: { accepted: true }, headers: { 'x-trace': 't-1', location: '/somewhere' } });
  });
});

describe('db fake', () => {
  it('answers with the most recent matching handler and records statements', async () => {
    host.db.on(/from notes/, () => [{ n: 1 }]);
    host.db.on(/count\(\*\)/, () => ({ rows: [{ n: 2 }], rowCount: 1 }));
    expect((await host.callRoute('sql', { body: { sql: 'select count(*) from notes' } })).body).toEqual({ rows: [{ n: 2 }], rowCount: 1 });
    expect((await host.callRoute('sql', { body: { sql: 'select *\n  from notes' } })).body).toEqual({ rows: [{ n: 1 }], rowCount: 1 });
  });

  it('fails a statement no handler matches, naming it', async () => {
    const answer = await host.callRoute('sql', { body: { sql: 'select 42' } });
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ code: 'fake_query_unhandled', error: expect.stringContaining('select 42') });
    expect(host.db.unhandled).toEqual([{ sql: 'select 42', params: [] }]);
  });

  it('refuses what the real host refuses, and passes simulated PostgreSQL errors through', async () => {
    const refused = await host.callRoute('sql', { body: { sql: '/* x */ COMMIT' } });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'sql_refused' });
    host.db.on(/^insert/, () => { throw dbError('23505', 'duplicate key value violates unique constraint'); });
    const duplicate = await host.callRoute('sql', { body: { sql: 'insert into notes values (1)' } });
    expect(duplicate).toMatchObject({ status: 400, body: { code: 'sql_23505', error: 'duplicate key value violates unique constraint' } });
  });
});

describe('http fake', () => {
  it('answers routed requests to allowed hosts and records them', async () => {
    host.http.route('https://api.example.com/v1/items', { body: { items: [1, 2] } });
    host.http.route(/^https:\/\/[a-z]+\.example\.org\//, (request) => ({ status: 201, body: `hello ${request.method}` }));
    host.http.route('http://localhost:8080/ping', { body: 'pong' });
    expect((await host.callRoute('fetch', { body: { url: 'https://api.example.com/v1/items' } })).body).toEqual({ status: 200, contentType: 'application/json', body: { items: [1, 2] } });
    expect((await host.callRoute('fetch', { body: { url: 'https://cdn.example.org/a', method: 'post' } })).body).toEqual({ status: 201, contentType: null, body: 'hello POST' });
    expect((await host.callRoute('fetch', { body: { url: 'http://localhost:8080/ping' } })).body).toMatchObject({ body: 'pong' });
    expect(host.http.requests[0]).toEqual({ url: 'https://api.example.com/v1/items', method: 'GET', headers: { 'x-probe': 'yes' }, body: null });
  });

  it('enforces the network allow-list and names a missing route', async () => {
    for (const url of ['https://evil.example.net/', 'https://example.org/', 'http://localhost:9090/', 'http://localhost/', 'file:///etc/passwd']) {
      const answer = await host.callRoute('fetch', { body: { url } });
      expect(answer.status, url).toBeGreaterThanOrEqual(400);
      expect((answer.body as { code: string }).code, url).toMatch(/^(network_denied|invalid_url)$/);
    }
    expect(host.http.requests).toEqual([]);
    const missing = await host.callRoute('fetch', { body: { url: 'https://api.example.com/nothing' } });
    expect(missing).toMatchObject({ status: 502, body: { code: 'fake_route_missing' } });
  });
});

describe('folders fake', () => {
  // Mounted folders belong to a company: the call serves one, as it must on the real host.
  const op = (body: Record<string, unknown>) => host.callRoute('folders', { body, companyId: COMPANY });

  it('reads seeded files, writes to read-write mounts and lists them', async () => {
    host.folders.set('docs', 'guide/intro.md', '# Intro');
    expect((await op({ op: 'read', folder: 'docs', path: './guide//intro.md' })).body).toEqual({ content: '# Intro' });
    expect((await op({ op: 'write', folder: 'out', path: 'a/b.txt', content: 'hello' })).body).toEqual({ written: 'a/b.txt' });
    expect(host.folders.get('out', 'a/b.txt')).toBe('hello');
    expect((await op({ op: 'list', folder: 'out' })).body).toEqual({ entries: [{ name: 'a', kind: 'directory', size: 0 }] });
    expect((await op({ op: 'list', folder: 'out', path: 'a' })).body).toEqual({ entries: [{ name: 'b.txt', kind: 'file', size: 5 }] });
    expect((await op({ op: 'exists', folder: 'docs', path: 'guide' })).body).toEqual({ exists: true });
    expect((await op({ op: 'exists', folder: 'docs', path: 'nope' })).body).toEqual({ exists: false });
  });

  it('refuses writes to read-only mounts, undeclared mounts and paths that leave the mount', async () => {
    expect((await op({ op: 'write', folder: 'docs', path: 'x', content: 'y' })).body).toMatchObject({ code: 'folder_read_only' });
    expect((await op({ op: 'read', folder: 'secrets', path: 'x' })).body).toMatchObject({ code: 'folder_not_configured' });
    for (const path of ['../x', 'a/../../x', '/etc/passwd', 'a\\b', 'a%2f..', 'a\u0000b']) {
      expect((await op({ op: 'read', folder: 'docs', path })).body, path).toMatchObject({ code: 'invalid_path' });
    }
    expect((await op({ op: 'read', folder: 'docs', path: 'missing.md' })).body).toMatchObject({ code: 'file_not_found' });
  });
});

describe('kernel fakes', () => {
  it('serve granted kernel capabilities and see the invocation identity', async () => {
    host.kernel.on('agents.pause', ([agentId, reason], invocation) => ({ paused: true, status: 'paused', agentId, reason, companyId: invocation.companyId }));
    const answer = await host.callRoute('pause', { params: { companyId: COMPANY, agentId: 'agent-9' } });
    expect(answer.body).toEqual({ paused: true, status: 'paused', agentId: 'agent-9', reason: 'over budget', companyId: COMPANY });
    expect(host.kernel.calls.at(-1)).toMatchObject({ method: 'agents.pause', args: ['agent-9', 'over budget'], invocation: { companyId: COMPANY, kind: 'route' } });
  });

  it('name the fake to add when a granted method has none', async () => {
    const fresh = await createTestHost(FIXTURE);
    try {
      const answer = await fresh.callRoute('pause', { params: { companyId: OTHER, agentId: 'a' } });
      expect(answer).toMatchObject({ status: 501, body: { code: 'fake_missing', error: "agents.pause has no test fake; add host.kernel.on('agents.pause', (args, invocation) => value)" } });
    } finally {
      fresh.dispose();
    }
  });
});

describe('tools, jobs, events and webhooks', () => {
  it('runs tools after validating their input, with logs captured', async () => {
    expect(await host.callTool('sum', { numbers: [1, 2, 3.5] })).toEqual({ total: 6.5 });
    expect(host.logs.at(-1)).toMatchObject({ level: 'info', message: 'summing', fields: { count: 3 } });
    await expect(host.callTool('sum', { numbers: ['x'] })).rejects.toBeInstanceOf(PluginCallError);
    await expect(host.callTool('nope')).rejects.toThrow('sdk-harness declares no tool "nope" in plugin.json');
  });

  it('runs jobs as the scheduler, without a company', async () => {
    host.db.on(/count\(\*\)::int as n from notes/, () => [{ n: 3 }]);
    expect(await host.runJob('tick')).toEqual({ notes: 3, actor: { type: 'system', id: 'scheduler', agentId: null }, companyId: null });
  });

  it('delivers subscribed events and lets hooks veto', async () => {
    const before = host.activity.length;
    expect(await host.dispatchEvent('company.created', { companyId: COMPANY })).toBe(true);
    expect(host.activity.slice(before)).toMatchObject([{ action: 'sdk-harness.company_seen', entityId: COMPANY, companyId: COMPANY, actor: { type: 'system', id: 'events' } }]);
    expect(await host.dispatchEvent('agent.created', { companyId: COMPANY, name: 'Ann' })).toBe(true);
    await expect(host.dispatchEvent('agent.created', { companyId: COMPANY, name: 'Bob' })).rejects.toMatchObject({ status: 422, code: 'agent_vetoed' });
    expect(await host.dispatchEvent('company.deleted', { companyId: COMPANY })).toBe(false);
  });

  it('runs hooks read-only, as the host does: a hook that writes fails and vetoes', async () => {
    const before = host.activity.length;
    await expect(host.dispatchEvent('agent.updated', { companyId: COMPANY, agentId: 'agent-1' })).rejects.toMatchObject({ status: 403, code: 'activity_read_only' });
    expect(host.activity.length).toBe(before);
  });

  it('delivers unsigned webhooks as unverified', async () => {
    const answer = await host.deliverWebhook('raw', { body: { a: 1 }, headers: { 'X-Sender': 'test' } });
    expect(answer).toEqual({ status: 200, body: { verified: false, body: '{"a":1}', headers: { 'x-sender': 'test' } }, headers: {} });
  });
});

describe('the sandbox', () => {
  it('refuses a ctx kept from a finished invocation', async () => {
    await host.callRoute('keep-ctx');
    expect((await host.callRoute('use-kept-ctx')).body).toEqual({ refused: true, code: 'invocation_closed', message: 'This ctx belongs to an invocation that has finished' });
  });

  it('fails a call that never settles at its deadline and replaces the isolate', async () => {
    const restarts = host.restarts;
    const started = Date.now();
    const answer = await host.callRoute('hang');
    expect(answer).toMatchObject({ status: 504, body: { code: 'plugin_timeout', error: 'sdk-harness did not answer within 1500 ms' } });
    expect(Date.now() - started).toBeLessThan(4000);
    expect(host.restarts).toBe(restarts + 1);
    expect((await host.callTool('sum', { numbers: [1] }))).toEqual({ total: 1 });
  });

  it('stops a runaway loop at its CPU limit', async () => {
    const answer = await host.callRoute('spin');
    expect(answer).toMatchObject({ status: 504, body: { code: 'plugin_timeout', error: 'sdk-harness exceeded its CPU time limit' } });
    expect((await host.callTool('sum', { numbers: [2] }))).toEqual({ total: 2 });
  });

  it('withdraws an answer given while a microtask it left keeps re-queuing itself, as the host does', async () => {
    const restarts = host.restarts;
    const answer = await host.callRoute('answer-then-requeue');
    expect(answer).toMatchObject({ status: 504, body: { code: 'plugin_timeout' } });
    expect((answer.body as { error: string }).error).toMatch(/answer was withdrawn/);
    expect(host.restarts).toBe(restarts + 1);
    expect((await host.callTool('sum', { numbers: [3] }))).toEqual({ total: 3 });
  });
});
