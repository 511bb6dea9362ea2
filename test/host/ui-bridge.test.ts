import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/ui-bridge', import.meta.url));
let t: TestKernel;
let company: any;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  await installAndEnable(t, FIXTURE);
});
afterAll(async () => { await t?.stop(); });

describe('UI-facing plugin calls', () => {
  it('lists slots and launchers of enabled plugins only', async () => {
    const shown = await t.api.get('/api/plugins/ui-contributions');
    expect(shown.body.slots).toContainEqual(expect.objectContaining({ pluginKey: 'ui-bridge', slot: 'company-sidebar', key: 'panel', order: 5 }));
    expect(shown.body.launchers).toContainEqual(expect.objectContaining({ pluginKey: 'ui-bridge', key: 'go' }));
    expect((await t.api.post('/api/plugins/ui-bridge/disable', {})).status).toBe(200);
    const hidden = await t.api.get('/api/plugins/ui-contributions');
    expect(hidden.body.slots.filter((s: any) => s.pluginKey === 'ui-bridge')).toEqual([]);
    expect((await t.api.post('/api/plugins/ui-bridge/enable', {})).status).toBe(200);
  });

  it('reads data by key, with the company checked by the kernel', async () => {
    const res = await t.api.post('/api/plugins/ui-bridge/data/summary', { companyId: company.id, params: { a: 1 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ input: { params: { a: 1 }, companyId: company.id }, company: company.id, actor: 'user' });
    const bridged = await t.api.post('/api/plugins/ui-bridge/bridge/data', { key: 'summary' });
    expect(bridged.body.company).toBeNull();
    expect((await t.api.post('/api/plugins/ui-bridge/data/summary', { companyId: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
    // A key the plugin has no handler for names nothing: 404, not a server error.
    for (const path of ['/api/plugins/ui-bridge/data/nope', '/api/plugins/ui-bridge/actions/nope', '/api/plugins/ui-bridge/data/Not%20A%20Key']) {
      const missing = await t.api.post(path, {});
      expect([path, missing.status, missing.body.code]).toEqual([path, 404, 'plugin_handler_not_found']);
    }
    const bridgedMissing = await t.api.post('/api/plugins/ui-bridge/bridge/action', { key: 'nope' });
    expect([bridgedMissing.status, bridgedMissing.body.code]).toEqual([404, 'plugin_handler_not_found']);
  });

  it('runs actions with activity and answers plugin errors with their status', async () => {
    const res = await t.api.post('/api/plugins/ui-bridge/actions/ping', { params: { n: 1 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ published: true });
    const refused = await t.api.post('/api/plugins/ui-bridge/bridge/action', { key: 'refuse' });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ code: 'not_today', error: 'Refused on purpose' });
    const activity = await t.sql.query("select action from activity_log where action = 'plugin.ui-bridge.action.ping'");
    expect(activity.rows).toHaveLength(1);
  });

  it('streams events a plugin publishes to subscribers', async () => {
    const controller = new AbortController();
    const response = await fetch(`${t.url}/api/plugins/ui-bridge/bridge/stream/updates`, { signal: controller.signal });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    expect(text).toContain('event: open');
    const action = await t.api.post('/api/plugins/ui-bridge/actions/ping', { params: { n: 2 } });
    expect(action.body).toEqual({ published: true });
    while (!text.includes('pinged')) text += decoder.decode((await reader.read()).value);
    expect(text).toContain('data: {"pinged":true');
    controller.abort();
  });

  it('is for board callers', async () => {
    const agent = await createAgent(t.api, company.id);
    const key = await createAgentKey(t.api, agent.id);
    expect((await t.api.as(key).post('/api/plugins/ui-bridge/data/summary', {})).status).toBe(403);
  });
});
