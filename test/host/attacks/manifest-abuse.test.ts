import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { expectKernelAlive, install, variant } from './support.ts';

/** SANDBOX.md class 8: manifest abuse. Each attack is a variant of test/host/fixtures/attack-manifest. */
let t: TestKernel;
let serial = 0;

beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

const ABSOLUTE = { id: 'http.routes.absolute', reason: 'Serves kernel-level paths' };
const ROUTES = { id: 'http.routes', reason: 'Serves routes' };

/** A variant with a fresh key, so that every attack installs on its own. */
async function hostile(change: (m: any) => void, raw?: string): Promise<{ folder: string; key: string }> {
  const key = `attack-manifest-${++serial}`;
  const folder = await variant('attack-manifest', (m) => { m.key = key; change(m); }, raw);
  return { folder, key };
}

async function refusedAtInstall(change: (m: any) => void, message: RegExp, raw?: string): Promise<any> {
  const { folder, key } = await hostile(change, raw);
  const res = await t.api.post('/api/plugins/install', { localPath: folder });
  expect(res.status, res.text).toBe(422);
  expect(res.body.code).toBe('invalid_manifest');
  expect(res.body.error, res.text).toMatch(message);
  expect((await t.sql.query('select 1 from plugins where key = $1', [key])).rows).toEqual([]);
  return res.body;
}

describe('malformed manifests', () => {
  it('refuses oversized, malformed and non-object manifests with 422 invalid_manifest', async () => {
    await refusedAtInstall(() => undefined, /exceeds 262144 bytes/, JSON.stringify({ key: 'attack-manifest-big', padding: 'x'.repeat(300_000) }));
    await refusedAtInstall(() => undefined, /is not valid JSON/, '{"key": "attack-manifest-broken",');
    for (const raw of ['null', '[]', '"plugin"', '42']) await refusedAtInstall(() => undefined, /Invalid manifest/, raw);
    await expectKernelAlive(t);
  });

  it('refuses wildcard and unknown capability ids', async () => {
    // Capabilities nothing serves are not grantable either: a grant must mean something.
    for (const id of ['*', 'database.*', 'database.namespace.*', 'DATABASE.NAMESPACE.WRITE', 'http.routes ', 'admin', 'agents.everything', 'skills.root', 'instance.settings.write']) {
      const body = await refusedAtInstall((m) => { m.capabilities = [{ id, reason: 'Wants everything' }]; }, /capabilities\.0\.id/);
      expect(body.issues).toContainEqual(expect.objectContaining({ path: 'capabilities.0.id' }));
    }
  });

  it('names unknown fields instead of ignoring them', async () => {
    const top = await refusedAtInstall((m) => { m.permissions = ['all']; }, /permissions is not a known manifest field/);
    expect(top.issues).toContainEqual({ path: 'permissions', message: 'is not a known manifest field' });
    await refusedAtInstall((m) => { m.routes[0].bypassAuth = true; }, /routes\.0\.bypassAuth is not a known manifest field/);
    await refusedAtInstall((m) => { m.limits = { memoryMb: 100_000 }; }, /limits\.memoryMb/);
    await refusedAtInstall((m) => { m.sdkApiVersion = 2; }, /sdkApiVersion/);
  });

  it('refuses plugin keys that name a host route or a kernel concept', async () => {
    for (const key of ['kernel', 'api', 'admin', 'plugins', 'host', 'system', 'keel', 'health', 'logs', 'config', 'examples', 'install', 'tools', 'manifest-schema', 'agent', 'company']) {
      const body = await refusedAtInstall((m) => { m.key = key; }, new RegExp(`key "${key}" is reserved`));
      expect(body.issues).toContainEqual(expect.objectContaining({ path: 'key' }));
      expect((await t.sql.query('select 1 from plugins where key = $1', [key])).rows).toEqual([]);
    }
    // The host's own routes still answer as before.
    const schema = await t.api.get('/api/plugins/manifest-schema');
    expect(schema.status).toBe(200);
    // The served schema enumerates the registry's capability ids, as the install check does.
    expect(schema.body.properties.capabilities.items.properties.id.enum).toContain('http.routes');
    expect(schema.body.properties.services.properties.provides.items.properties.callerRequires.items.enum).toContain('http.routes');
    expect((await t.api.get('/api/plugins/examples')).status).toBe(200);
  });

  it('refuses plugin keys and contribution keys that name a member every object inherits', async () => {
    for (const key of ['constructor', '__proto__', 'hasOwnProperty', 'prototype', 'toString', '__defineGetter__']) {
      const body = await refusedAtInstall((m) => { m.key = key; }, /plugin\.json: key /);
      expect(body.issues, key).toContainEqual(expect.objectContaining({ path: 'key' }));
      expect((await t.sql.query('select 1 from plugins where key = $1', [key])).rows).toEqual([]);
    }
    const constructorKey = await refusedAtInstall((m) => { m.key = 'constructor'; }, /key "constructor" is reserved \(it names a member every JavaScript object inherits\)/);
    expect(constructorKey.issues).toEqual([{ path: 'key', message: expect.stringMatching(/is reserved/) }]);
    // Handler keys are property names in the plugin's tables, and mount keys in the host's.
    const route = await refusedAtInstall((m) => { m.routes[0].key = 'constructor'; }, /routes\.0\.key must not be "constructor": it names a member every JavaScript object inherits/);
    expect(route.issues).toEqual([{ path: 'routes.0.key', message: 'must not be "constructor": it names a member every JavaScript object inherits; choose another name' }]);
    await refusedAtInstall((m) => {
      m.capabilities.push({ id: 'tools.register', reason: 'Offers a tool' });
      m.tools = [{ key: 'constructor', description: 'Names an inherited member', inputSchema: { type: 'object' } }];
    }, /tools\.0\.key must not be "constructor"/);
    await refusedAtInstall((m) => { m.routes[0].key = 'prototype'; }, /routes\.0\.key must not be "prototype"/);
    // Path parameters become keys of the request's params.
    await refusedAtInstall((m) => { m.routes[0].path = '/ping/:__proto__'; }, /routes\.0\.path parameter :__proto__ names a member every JavaScript object inherits/);
    await refusedAtInstall((m) => { m.routes[0].path = '/ping/{constructor}'; }, /routes\.0\.path parameter :constructor names a member/);
    await expectKernelAlive(t);
  });

  it('keeps the files a manifest names inside the plugin folder', async () => {
    await refusedAtInstall((m) => { m.entry = '../attack-escape/src/index.ts'; }, /entry must be a path inside the plugin folder/);
    await refusedAtInstall((m) => { m.entry = 'src/../../attack-escape/src/index.ts'; }, /entry must be a path inside the plugin folder/);
    await refusedAtInstall((m) => { m.capabilities.push({ id: 'database.namespace.migrate', reason: 'Runs migrations' }); m.database = { namespace: 'attack_manifest', migrations: '../attack-sql/migrations' }; }, /database\.migrations must be a path inside/);
  });
});

describe('routes', () => {
  it('refuses relative routes that shadow the host\'s own per-plugin routes, in any spelling', async () => {
    for (const path of ['/health', '/logs', '/config', '/config/test', '/Health', '/jobs', '/webhooks/github', '/enable', '/upgrade',
      '/companies/:companyId/local-folders', '/companies/{companyId}/local-folders/docs/status', '/companies/:id/LOCAL-FOLDERS']) {
      await refusedAtInstall((m) => { m.routes = [{ key: 'claim', method: 'GET', path, auth: 'none' }]; }, /shadows a host route/);
    }
    for (const path of ['/../../companies', '/x/../../../health', '/./health', '//health']) {
      await refusedAtInstall((m) => { m.routes = [{ key: 'claim', method: 'GET', path, auth: 'none' }]; }, /must not contain \. or \.\. segments/);
    }
  });

  it('refuses absolute routes without http.routes.absolute, outside /api/ or inside /api/plugins', async () => {
    await refusedAtInstall((m) => { m.routes = [{ key: 'claim', method: 'POST', path: '/api/attack/claim', auth: 'none', absolute: true }]; }, /needs the http.routes.absolute capability/);
    for (const path of ['/api/plugins', '/api/plugins/echo/health', '/API/PLUGINS/echo/x']) {
      await refusedAtInstall((m) => { m.capabilities.push(ABSOLUTE); m.routes = [{ key: 'claim', method: 'GET', path, auth: 'none', absolute: true }]; }, /absolute paths must start with \/api\/ and stay outside \/api\/plugins\//);
    }
    // A path outside /api/ is a public root route: it needs its own capability.
    await refusedAtInstall((m) => { m.capabilities.push(ABSOLUTE); m.routes = [{ key: 'claim', method: 'GET', path: '/health', auth: 'none', absolute: true }]; }, /needs the http\.routes\.public capability/);
  });

  it('refuses, at enable, absolute routes that claim the kernel\'s paths, and leaves the plugin disabled', async () => {
    for (const [method, path] of [['POST', '/api/companies'], ['GET', '/api/health'], ['GET', '/api/companies/:companyId'], ['GET', '/api/Companies'], ['GET', '/api/companies/'], ['DELETE', '/api/agents/{agentId}']]) {
      const { folder, key } = await hostile((m) => { m.capabilities.push(ABSOLUTE); m.routes = [{ key: 'claim', method, path, auth: 'none', absolute: true }]; });
      await install(t, folder);
      const res = await t.api.post(`/api/plugins/${key}/enable`, {});
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(409);
      expect(res.body).toMatchObject({ code: 'route_conflict', details: { plugins: [key, 'kernel'] } });
      const stored = (await t.sql.query('select status, granted_capabilities from plugins where key = $1', [key])).rows[0];
      expect(stored.status).not.toBe('enabled');
    }
    const companies = await t.api.get('/api/companies');
    expect(companies.status).toBe(200);
    expect(Array.isArray(companies.body)).toBe(true);
    await expectKernelAlive(t);
  });

  it('refuses a second plugin claiming the same route, naming both, and the first keeps serving it', async () => {
    const route = { key: 'claim', method: 'GET', path: '/api/attack-manifest/shared', auth: 'board', absolute: true };
    const first = await hostile((m) => { m.capabilities.push(ABSOLUTE); m.routes = [route]; });
    const second = await hostile((m) => { m.capabilities.push(ABSOLUTE); m.routes = [{ ...route, path: '/api/attack-manifest/{other}' }]; });
    await install(t, first.folder);
    expect((await t.api.post(`/api/plugins/${first.key}/enable`, {})).status).toBe(200);
    await install(t, second.folder);
    const res = await t.api.post(`/api/plugins/${second.key}/enable`, {});
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe('route_conflict');
    expect(res.body.error).toContain(first.key);
    expect(res.body.error).toContain(second.key);
    expect((await t.sql.query('select status from plugins where key = $1', [second.key])).rows[0].status).not.toBe('enabled');
    const served = await t.api.get('/api/attack-manifest/shared');
    expect(served.status).toBe(200);
    expect(served.body).toEqual({ claimedBy: 'attack-manifest' });
  });

  it('refuses one of two plugins enabled at the same moment that claim the same route, before anything of it is stored', async () => {
    const route = { key: 'claim', method: 'GET', path: '/api/attack-manifest/raced', auth: 'board', absolute: true };
    const first = await hostile((m) => { m.capabilities.push(ABSOLUTE); m.routes = [route]; });
    const second = await hostile((m) => { m.capabilities.push(ABSOLUTE); m.routes = [{ ...route, path: '/api/attack-manifest/{raced}' }]; });
    await install(t, first.folder);
    await install(t, second.folder);
    const before = (await t.sql.query('select key, status, granted_capabilities, last_error from plugins where key = any($1) order by key', [[first.key, second.key]])).rows;
    const answers = await Promise.all([first, second].map(({ key }) => t.api.post(`/api/plugins/${key}/enable`, {})));
    expect(answers.map((res) => res.status).sort(), answers.map((res) => res.text).join('\n')).toEqual([200, 409]);
    const refused = answers[0]!.status === 409 ? first : second;
    expect(answers.find((res) => res.status === 409)!.body.code).toBe('route_conflict');
    // The refused one is as it was: not enabled, not failed, no grant stored.
    const after = (await t.sql.query('select key, status, granted_capabilities, last_error from plugins where key = $1', [refused.key])).rows[0];
    expect(after).toEqual(before.find((row: any) => row.key === refused.key));
    expect((await t.api.get('/api/attack-manifest/raced')).status).toBe(200);
  });

  it('does not serve absolute routes when http.routes.absolute was declared but not granted (the plugin does not start at all)', async () => {
    const { folder, key } = await hostile((m) => {
      m.capabilities.push(ABSOLUTE);
      m.routes.push({ key: 'claim', method: 'GET', path: '/api/attack-manifest/ungranted', auth: 'board', absolute: true });
    });
    await install(t, folder);
    const partial = await t.api.post(`/api/plugins/${key}/enable`, { grant: ['http.routes'] });
    expect(partial.status, partial.text).toBe(409);
    expect(partial.body.code).toBe('capability_grant_required');
    expect((await t.sql.query('select status from plugins where key = $1', [key])).rows[0].status).not.toBe('enabled');
    expect((await t.api.get('/api/attack-manifest/ungranted')).status).toBe(404);
    expect((await t.api.get(`/api/plugins/${key}/ping`)).status).toBe(404);
    const undeclared = await t.api.post(`/api/plugins/${key}/enable`, { grant: ['http.routes', 'http.routes.absolute', 'secrets.resolve'] });
    expect(undeclared.status).toBe(422);
    expect(undeclared.body.code).toBe('capability_not_declared');
  });
});

describe('plugin code', () => {
  /** A variant whose entry also imports a generated module. */
  async function withModule(source: string): Promise<{ folder: string; key: string }> {
    const plugin = await hostile(() => undefined);
    await writeFile(join(plugin.folder, 'src', 'extra.ts'), source);
    const entry = await readFile(join(plugin.folder, 'src', 'index.ts'), 'utf8');
    await writeFile(join(plugin.folder, 'src', 'index.ts'), `import { extra } from './extra.ts';\n(globalThis as Record<string, unknown>).keep = extra;\n${entry}`);
    return plugin;
  }

  it('refuses sources and bundles over their size limits, naming the limit, and stores nothing', async () => {
    const big = await withModule(`export const extra = ${JSON.stringify('x'.repeat(9 * 1024 * 1024))};\n`);
    const res = await t.api.post('/api/plugins/install', { localPath: big.folder });
    expect(res.status, res.text.slice(0, 300)).toBe(422);
    expect(res.body.code).toBe('plugin_too_large');
    expect(res.body.error).toMatch(/source files are larger than 8 MiB/);
    // Under the source limit, but every character becomes a six-character escape in the bundle.
    const wide = await withModule(`export const extra = ${JSON.stringify('€'.repeat(1_500_000))};\n`);
    const bundle = await t.api.post('/api/plugins/install', { localPath: wide.folder });
    expect(bundle.status, bundle.text.slice(0, 300)).toBe(422);
    expect(bundle.body.code).toBe('plugin_too_large');
    expect(bundle.body.error).toMatch(/bundle is larger than 8 MiB/);
    for (const key of [big.key, wide.key]) expect((await t.sql.query('select 1 from plugins where key = $1', [key])).rows).toEqual([]);
  });

  it('survives a parser bomb that kills the bundler: the bomb is refused and the next install builds', async () => {
    const depth = 400_000;
    const bomb = await withModule(`export const extra = ${'['.repeat(depth)}${']'.repeat(depth)};\n`);
    const res = await t.api.post('/api/plugins/install', { localPath: bomb.folder });
    expect(res.status, res.text.slice(0, 300)).toBe(422);
    expect(res.body.code).toBe('plugin_build_failed');
    const next = await hostile(() => undefined);
    const installed = await t.api.post('/api/plugins/install', { localPath: next.folder });
    expect(installed.status, installed.text.slice(0, 300)).toBe(201);
    expect((await t.api.post(`/api/plugins/${next.key}/enable`, {})).status).toBe(200);
    const ping = await t.api.get(`/api/plugins/${next.key}/ping`);
    expect(ping.status, ping.text).toBe(200);
    // (Health is down here for a plugin an earlier test left failed on purpose.)
    expect((await t.api.get('/api/companies')).status).toBe(200);
  });
});

describe('upgrades', () => {
  it('refuses an upgrade that asks for a new capability without the operator\'s renewed grant; the running version keeps its grants', async () => {
    const { folder, key } = await hostile((m) => { m.capabilities = [ROUTES]; });
    await install(t, folder);
    expect((await t.api.post(`/api/plugins/${key}/enable`, {})).status).toBe(200);
    const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
    manifest.version = '2.0.0';
    manifest.capabilities.push({ id: 'companies.read', reason: 'Now reads companies' }, { id: 'secrets.resolve', reason: 'And secrets' });
    await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest));
    const res = await t.api.post(`/api/plugins/${key}/upgrade`, {});
    expect(res.status, res.text).toBe(409);
    expect(res.body).toMatchObject({ code: 'capability_grant_required', details: { newCapabilities: ['companies.read', 'secrets.resolve'] } });
    const stored = await t.api.get(`/api/plugins/${key}`);
    expect(stored.body).toMatchObject({ version: '1.0.0', status: 'enabled', grantedCapabilities: ['http.routes'] });
    const ping = await t.api.get(`/api/plugins/${key}/ping`);
    expect(ping.status).toBe(200);
    expect(ping.body.ctx).toEqual(['config', 'invocation', 'log']);
  });

  it('adds a capability through the one path the refusal names: the upgrade with the operator\'s grant', async () => {
    const { folder, key } = await hostile((m) => { m.capabilities = [ROUTES]; });
    await install(t, folder);
    expect((await t.api.post(`/api/plugins/${key}/enable`, {})).status).toBe(200);
    const manifest = JSON.parse(await readFile(join(folder, 'plugin.json'), 'utf8'));
    manifest.version = '2.0.0';
    manifest.capabilities.push({ id: 'companies.read', reason: 'Now reads companies' });
    await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest));
    const refused = await t.api.post(`/api/plugins/${key}/upgrade`, {});
    expect(refused.body.error).toBe(`${key} 2.0.0 asks for companies.read, which the operator has not granted; grant them with this upgrade: keel plugin upgrade ${key} --grant companies.read (POST /api/plugins/${key}/upgrade {"grant": ["companies.read"]})`);
    // Granting something the new version does not declare is refused, and changes nothing.
    const wrong = await t.api.post(`/api/plugins/${key}/upgrade`, { grant: ['secrets.resolve'] });
    expect(wrong.status).toBe(422);
    expect(wrong.body.code).toBe('capability_not_declared');
    const upgraded = await t.api.post(`/api/plugins/${key}/upgrade`, { grant: ['companies.read'] });
    expect(upgraded.status, upgraded.text).toBe(200);
    expect(upgraded.body).toMatchObject({ version: '2.0.0', status: 'enabled', grantedCapabilities: ['http.routes', 'companies.read'] });
    const ping = await t.api.get(`/api/plugins/${key}/ping`);
    expect(ping.body.ctx).toEqual(['companies', 'config', 'invocation', 'log']);
    // A capability the next version no longer declares is no longer granted.
    manifest.version = '3.0.0';
    manifest.capabilities = manifest.capabilities.filter((c: { id: string }) => c.id !== 'companies.read');
    await writeFile(join(folder, 'plugin.json'), JSON.stringify(manifest));
    const narrowed = await t.api.post(`/api/plugins/${key}/upgrade`, {});
    expect(narrowed.body).toMatchObject({ version: '3.0.0', grantedCapabilities: ['http.routes'] });
  });
});
