import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

/**
 * One structured line per request (method, route pattern, status, duration, actor kind,
 * company, request id; never a body, a query or a secret), the request id in the response
 * header and in every error body, and the plugin lifecycle in the log.
 */
const ECHO = fileURLToPath(new URL('../host/fixtures/echo', import.meta.url));
const logs: string[] = [];
let t: TestKernel;
let company: any;

beforeAll(async () => {
  t = await startTestKernel({}, { captureLogs: logs });
  company = await createCompany(t.api);
});
afterAll(async () => { await t?.stop(); });

const lines = () => logs.flatMap((text) => text.split('\n')).filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>);
const requestLine = (requestId: string | null) => lines().find((line) => line.msg === 'request' && line.requestId === requestId);

describe('request logs and request ids', () => {
  it('logs one line per request with the route pattern, never the path, query or body', async () => {
    const secret = 'sk-live-DO-NOT-LOG-0123456789';
    const res = await t.api.patch(`/api/companies/${company.id}?token=${secret}`, { description: secret });
    expect(res.status).toBe(200);
    const line = requestLine(res.headers.get('x-request-id'));
    expect(line).toMatchObject({ level: 30, method: 'PATCH', route: '/api/companies/:companyId', status: 200, actor: 'board', companyId: company.id });
    expect(typeof line!.durationMs).toBe('number');
    expect(lines().filter((entry) => entry.requestId === line!.requestId && entry.msg === 'request')).toHaveLength(1);
    expect(logs.join('\n')).not.toContain(secret);
  });

  it('names the agent and its company for an agent request, and an unmatched route as null', async () => {
    const agent = await createAgent(t.api, company.id);
    const key = await createAgentKey(t.api, agent.id);
    const me = await t.api.as(key).get('/api/agents/me');
    expect(me.status).toBe(200);
    expect(requestLine(me.requestId)).toMatchObject({ method: 'GET', route: '/api/agents/me', status: 200, actor: 'agent', companyId: company.id });
    expect(logs.join('\n')).not.toContain(key);
    const missing = await t.api.get('/api/nothing-here');
    expect(requestLine(missing.requestId)).toMatchObject({ route: null, status: 404 });
  });

  it('returns the request id in the header and in every error body, keeping a sane incoming one', async () => {
    const raw = await fetch(`${t.url}/api/companies/${company.id}`, { method: 'PATCH', headers: { 'content-type': 'application/json', 'x-request-id': 'trace-42.a:b' }, body: '{"name": ' });
    expect(raw.status).toBe(400);
    expect(raw.headers.get('x-request-id')).toBe('trace-42.a:b');
    expect(await raw.json()).toMatchObject({ code: 'bad_request', requestId: 'trace-42.a:b' });

    for (const unsafe of ['has spaces', 'x'.repeat(129), 'line\tbreak']) {
      const replaced = await fetch(`${t.url}/api/does-not-exist`, { headers: { 'x-request-id': unsafe } });
      const id = replaced.headers.get('x-request-id')!;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await replaced.json()).toEqual({ error: 'No route for GET /api/does-not-exist', code: 'route_not_found', requestId: id });
    }
    const ok = await t.api.get(`/api/companies/${company.id}`);
    expect(ok.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ok.body.requestId).toBeUndefined();
  });

  it('logs plugin routes by their pattern, and the plugin lifecycle with the grants', async () => {
    await installAndEnable(t, ECHO);
    const installed = lines().find((line) => line.msg === 'plugin.installed' && line.plugin === 'echo');
    expect(installed).toMatchObject({ level: 30, by: 'user:local-board' });
    const enabled = lines().find((line) => line.msg === 'plugin.enabled' && line.plugin === 'echo');
    expect(enabled?.granted).toEqual(expect.arrayContaining(['http.routes']));
    const created = await t.api.post(`/api/plugins/echo/companies/${company.id}/notes`, { text: 'logged' });
    expect(created.status).toBe(201);
    expect(requestLine(created.requestId)).toMatchObject({ route: '/api/plugins/echo/companies/:companyId/notes', status: 201, companyId: company.id });
    expect((await t.api.post('/api/plugins/echo/disable', {})).status).toBe(200);
    expect(lines().some((line) => line.msg === 'plugin.disabled' && line.plugin === 'echo')).toBe(true);
  });
});
