import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteManifest } from '../../sdk/plugin/manifest.ts';
import { loadConfig } from '../../kernel/config/load.ts';
import { kernelRouterOf } from '../../kernel/http/app.ts';
import { startKernel, type RunningKernel } from '../../kernel/kernel.ts';
import { createLogger } from '../../kernel/logger.ts';
import { authMismatches } from '../support/auth-probe.ts';
import { boardToken, insertUser } from '../support/fixtures.ts';
import { createApi, FIRST_PARTY_KEYS, FIRST_PARTY_PLUGINS, startTestKernel, type Api, type TestKernel } from '../support/harness.ts';
import { expectValidDocument, fetchDocument, operationsOf } from '../support/openapi.ts';
import { pluginVariant } from '../support/plugins.ts';

/**
 * GET /api/openapi.json with plugins: the first-party plugins and a fixture plugin
 * whose note body names a definition by a local $ref. Every mounted plugin route is listed
 * at its mounted path with its auth kind, from the schemas the host validates with; a
 * disabled plugin's routes leave the document, in this process and in another one.
 */
const ECHO = fileURLToPath(new URL('./fixtures/echo', import.meta.url));
const NOTE_TEXT = { type: 'string', minLength: 1, maxLength: 1000 };

let t: TestKernel;
let admin: string;
let board: string;
let agent: string;
let companyId: string;
let echoFolder: string;

beforeAll(async () => {
  t = await startTestKernel({ deploymentMode: 'authenticated' }, { firstPartyDir: FIRST_PARTY_PLUGINS });
  admin = await boardToken(t, await insertUser(t, { admin: true }));
  board = await boardToken(t, await insertUser(t));
  companyId = (await t.api.post('/api/companies', { name: 'Plugins' }, { token: admin })).body.id;
  const created = (await t.api.post(`/api/companies/${companyId}/agents`, { name: 'Caller', role: 'engineer' }, { token: admin })).body;
  agent = (await t.api.post(`/api/agents/${created.id}/keys`, {}, { token: admin })).body.token;
  echoFolder = await pluginVariant(ECHO, (manifest) => {
    const note = manifest.routes.find((route: RouteManifest) => route.key === 'create-note');
    note.body = { type: 'object', required: ['text'], properties: { text: { $ref: '#/$defs/text' } }, $defs: { text: NOTE_TEXT } };
  });
  expect((await t.api.post('/api/plugins/install', { localPath: echoFolder }, { token: admin })).status).toBe(201);
  expect((await t.api.post('/api/plugins/echo/enable', {}, { token: admin })).status).toBe(200);
});
afterAll(async () => {
  await t?.stop();
  if (echoFolder) await rm(echoFolder, { recursive: true, force: true });
});

/** Where the host mounts a manifest route, in OpenAPI's template form. */
function mountedPath(plugin: string, route: RouteManifest): string {
  const path = route.absolute ? route.path : `/api/plugins/${plugin}${route.path === '/' ? '' : route.path}`;
  return path.replace(/:([A-Za-z_]\w*)/g, '{$1}');
}

const pluginOperations = (document: any, plugin: string) => operationsOf(document).filter(({ operation }) => operation['x-keel-plugin'] === plugin);

describe('GET /api/openapi.json with plugins', () => {
  it('is valid, and lists every route of every enabled plugin where it is mounted, with its auth kind', async () => {
    const document = await fetchDocument(t.api, agent);
    await expectValidDocument(document);
    const host = t.kernel.host;
    expect([...host.plugins.keys()].sort()).toEqual([...FIRST_PARTY_KEYS, 'echo'].sort());
    for (const loaded of host.plugins.values()) {
      // A plugin may serve no routes at all (remote-runner contributes an adapter type only): it lists none.
      const routes = loaded.manifest.routes ?? [];
      for (const route of routes) {
        const operation = document.paths[mountedPath(loaded.key, route)]?.[route.method.toLowerCase()];
        expect(operation, `${loaded.key} ${route.method} ${route.path}`).toBeDefined();
        expect(operation['x-keel-auth']).toBe(route.auth);
        expect(operation['x-keel-plugin']).toBe(loaded.key);
        expect(operation.tags).toEqual([`plugin:${loaded.key}`]);
        expect(operation.operationId).toBe(`${loaded.key}.${route.key}`);
        expect(Object.keys(operation.responses)).toContain(String(route.successStatus ?? 200));
        // A create declared to take an Idempotency-Key documents the header; no other route does.
        const keyed = (operation.parameters ?? []).some((parameter: any) => parameter.in === 'header' && parameter.name === 'Idempotency-Key');
        expect(keyed, `${loaded.key} ${route.method} ${route.path}`).toBe(route.idempotencyKey === true);
      }
      expect(pluginOperations(document, loaded.key)).toHaveLength(routes.length);
    }
    expect(document.tags.map((tag: any) => tag.name)).toEqual(expect.arrayContaining(['plugin:costs', 'plugin:echo']));
    // The kernel's routes are all still there beside them.
    const kernelLayers = kernelRouterOf(t.kernel.services)!.stack.flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD'));
    expect(operationsOf(document)).toHaveLength(kernelLayers.length + host.routes.all().length);
  });

  it('states plugin route auth kinds as the host enforces them', async () => {
    const document = await fetchDocument(t.api, admin);
    const operations = [...FIRST_PARTY_KEYS, 'echo'].flatMap((key) => pluginOperations(document, key));
    // Refusals only: an admitted call would run the fixture's runaway handlers.
    expect(await authMismatches(t.api, operations, { admin, board, agent }, { refusalsOnly: true })).toEqual([]);
  });

  it('embeds the schemas the host validates plugin requests with', async () => {
    const document = await fetchDocument(t.api, admin);
    const costs = t.kernel.host.plugins.get('costs')!.manifest.routes!;
    const events = costs.find((route) => route.key === 'create-cost-event')!;
    expect(document.paths[mountedPath('costs', events)].post.requestBody.content['application/json'].schema).toEqual(events.body);
    const summary = costs.find((route) => route.path.endsWith('/costs/summary'))!;
    const from = document.paths[mountedPath('costs', summary)].get.parameters.find((p: any) => p.name === 'from');
    expect(from).toMatchObject({ in: 'query', schema: (summary.query!.properties as any).from });

    // A local reference is kept pointing into the schema it belongs to.
    const note = document.paths['/api/plugins/echo/companies/{companyId}/notes'].post;
    expect(note.requestBody.content['application/json'].schema.properties.text).toEqual({ $ref: '#/components/schemas/echo.create-note.body/$defs/text' });
    expect(document.components.schemas['echo.create-note.body'].$defs.text).toEqual(NOTE_TEXT);
    expect(Object.keys(note.responses)).toContain('201');

    const path = `/api/plugins/echo/companies/${companyId}/notes`;
    const tooLong = await t.api.post(path, { text: 'x'.repeat(NOTE_TEXT.maxLength + 1) }, { token: admin });
    expect([tooLong.status, tooLong.body.code, tooLong.body.issues?.[0]?.path]).toEqual([400, 'validation_failed', 'text']);
    expect((await t.api.post(path, { text: 'x'.repeat(NOTE_TEXT.maxLength) }, { token: admin })).status).toBe(201);
  });

  it("drops a disabled plugin's routes, and lists them again once it is enabled", async () => {
    const before = await t.api.get('/api/openapi.json', { token: admin });
    expect((await t.api.post('/api/plugins/echo/disable', {}, { token: admin })).status).toBe(200);
    const disabled = await t.api.get('/api/openapi.json', { token: admin });
    expect(disabled.headers.get('etag')).not.toBe(before.headers.get('etag'));
    expect(pluginOperations(disabled.body, 'echo')).toEqual([]);
    expect(disabled.body.tags.map((tag: any) => tag.name)).not.toContain('plugin:echo');
    expect(disabled.body.components.schemas['echo.create-note.body']).toBeUndefined();
    expect(pluginOperations(disabled.body, 'costs').length).toBeGreaterThan(5);
    await expectValidDocument(disabled.body);

    expect((await t.api.post('/api/plugins/echo/enable', {}, { token: admin })).status).toBe(200);
    const again = await t.api.get('/api/openapi.json', { token: admin });
    expect(again.headers.get('etag')).toBe(before.headers.get('etag'));
    expect(again.body).toEqual(before.body);
  });
});

describe('GET /api/openapi.json in another process on the same database', () => {
  let second: RunningKernel;
  let secondApi: Api;
  let secondDir: string;

  beforeAll(async () => {
    secondDir = await mkdtemp(join(tmpdir(), 'keel-openapi-second-'));
    for (const file of ['agent-jwt.secret', 'secrets-master.keys']) await copyFile(join(t.dataDir, file), join(secondDir, file)).catch(() => undefined);
    const config = loadConfig({ env: {}, overrides: { deploymentMode: 'authenticated', dataDir: secondDir, database: { url: t.databaseUrl }, logging: { level: 'silent' }, server: { host: '127.0.0.1', port: 0, exposure: 'private' } } });
    second = await startKernel(config, { log: createLogger('silent'), port: 0, firstPartyDir: FIRST_PARTY_PLUGINS });
    secondApi = createApi(second.url);
  });
  afterAll(async () => {
    await second?.stop();
    if (secondDir) await rm(secondDir, { recursive: true, force: true });
  });

  async function echoRoutesThere(): Promise<number> {
    return pluginOperations(await fetchDocument(secondApi, admin), 'echo').length;
  }

  async function eventually(expected: number): Promise<number> {
    let seen = await echoRoutesThere();
    for (let i = 0; i < 100 && seen !== expected; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      seen = await echoRoutesThere();
    }
    return seen;
  }

  it('follows a plugin disabled and enabled through the first process', async () => {
    const echoRoutes = t.kernel.host.plugins.get('echo')!.manifest.routes!.length;
    expect(await eventually(echoRoutes)).toBe(echoRoutes);
    expect((await t.api.post('/api/plugins/echo/disable', {}, { token: admin })).status).toBe(200);
    expect(await eventually(0)).toBe(0);
    expect((await t.api.post('/api/plugins/echo/enable', {}, { token: admin })).status).toBe(200);
    expect(await eventually(echoRoutes)).toBe(echoRoutes);
  }, 60_000);
});
