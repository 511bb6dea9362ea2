import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

const EXAMPLES = ['file-drop', 'greeting-panel', 'scheduled-heartbeat', 'webhook-inbox', 'word-count'];
const folderOf = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
const SECRET = 'whsec-kernel-test-0123456789';
let t: TestKernel;
let company: any;

function signed(body: string, secret = SECRET, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return { 'content-type': 'application/json', 'x-inbox-signature': `sha256=${signature}`, 'x-inbox-timestamp': String(timestamp) };
}

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api, { name: 'Acme Examples' });
});
afterAll(async () => { await t?.stop(); });

describe('example plugins in a real kernel', () => {
  it('are listed by GET /api/plugins/examples, not yet installed', async () => {
    const res = await t.api.get('/api/plugins/examples');
    expect(res.status).toBe(200);
    const listed = res.body.filter((e: any) => EXAMPLES.includes(e.pluginKey));
    expect(listed.map((e: any) => e.pluginKey).sort()).toEqual(EXAMPLES);
    for (const example of listed) {
      expect(example).toMatchObject({ packageName: `@keel-examples/${example.pluginKey}`, localPath: folderOf(example.pluginKey), tag: 'example', experimental: false, installed: false });
      expect(example.description).toMatch(/^Example /);
    }
  });

  it('install from their folders and enable', async () => {
    for (const name of EXAMPLES) {
      const installed = await t.api.post('/api/plugins/install', { localPath: folderOf(name) });
      expect(installed.status, installed.text).toBe(201);
      expect(installed.body).toMatchObject({ pluginKey: name, tag: 'example', status: 'installed' });
      const enabled = await t.api.post(`/api/plugins/${name}/enable`, {});
      expect(enabled.status, enabled.text).toBe(200);
      expect(enabled.body).toMatchObject({ status: 'enabled', running: 'running' });
    }
    const listed = await t.api.get('/api/plugins/examples');
    expect(listed.body.filter((e: any) => EXAMPLES.includes(e.pluginKey)).every((e: any) => e.installed)).toBe(true);
  });

  describe('file-drop (blobs)', () => {
    it('stores an upload, writes a receipt and streams the file back; another company gets 404', async () => {
      const form = new FormData();
      form.append('file', new Blob(['id,amount\n1,20\n'], { type: 'text/csv' }), 'ledger.csv');
      const res = await t.api.post(`/api/plugins/file-drop/companies/${company.id}/drops`, undefined, { rawBody: form });
      expect(res.status, res.text).toBe(201);
      expect(res.body.file).toMatchObject({ owner: 'file-drop', contentType: 'text/csv', byteSize: 15, filename: 'ledger.csv' });
      const receipt = await t.api.get(`/api/plugins/file-drop/companies/${company.id}/drops/${res.body.receiptId}/receipt`);
      expect(receipt.body.text).toMatch(/^Received ledger.csv \(text\/csv, 15 bytes, sha256 [0-9a-f]{64}\)/);
      const download = await fetch(`${t.url}/api/plugins/file-drop/companies/${company.id}/drops/${res.body.file.id}`);
      expect(download.status).toBe(200);
      expect(await download.text()).toBe('id,amount\n1,20\n');
      expect(download.headers.get('content-disposition')).toMatch(/^inline; filename="ledger.csv"/);
      expect(download.headers.get('x-content-type-options')).toBe('nosniff');
      const other = await createCompany(t.api, { name: 'Other Examples' });
      expect((await t.api.get(`/api/plugins/file-drop/companies/${other.id}/drops/${res.body.file.id}`)).status).toBe(404);
    });
  });

  describe('word-count (tool)', () => {
    it('is listed and runs through POST /api/plugins/tools/execute', async () => {
      const tools = await t.api.get('/api/plugins/tools');
      expect(tools.body).toContainEqual(expect.objectContaining({ key: 'word-count.count', pluginKey: 'word-count', name: 'count' }));
      const res = await t.api.post('/api/plugins/tools/execute', { tool: 'word-count.count', input: { text: 'To be, or not to be.', top: 2 }, companyId: company.id });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ tool: 'word-count.count', result: { words: 6, characters: 20, charactersWithoutSpaces: 15, lines: 1, topWords: [{ word: 'be', count: 2 }, { word: 'to', count: 2 }] } });
      const activity = await t.sql.query("select actor_id from activity_log where company_id = $1 and action = 'plugin.word-count.tool.count'", [company.id]);
      expect(activity.rows).toEqual([{ actor_id: 'local-board' }]);
    });

    it('refuses input outside its schema', async () => {
      const res = await t.api.post('/api/plugins/tools/execute', { tool: 'word-count.count', input: { text: 'x', top: 99 } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'validation_failed' });
    });
  });

  describe('webhook-inbox (signed webhook)', () => {
    beforeAll(async () => {
      const res = await t.api.post('/api/plugins/webhook-inbox/config', { config: { signingSecret: SECRET } });
      expect(res.status, res.text).toBe(200);
    });

    it('stores a signed delivery in its own table', async () => {
      const body = JSON.stringify({ type: 'order.created', order: 17 });
      const res = await t.api.post('/api/plugins/webhook-inbox/webhooks/deliveries', undefined, { rawBody: body, headers: signed(body) });
      expect(res.status, res.text).toBe(202);
      expect(res.body).toEqual({ id: 1, event: 'order.created' });
      const rows = await t.sql.query('select event, payload, bytes from plugin_webhook_inbox.deliveries');
      expect(rows.rows).toEqual([{ event: 'order.created', payload: { type: 'order.created', order: 17 }, bytes: body.length }]);
      const listed = await t.api.get('/api/plugins/webhook-inbox/deliveries?event=order.created');
      expect(listed.status).toBe(200);
      expect(listed.body).toMatchObject([{ id: 1, event: 'order.created', payload: { order: 17 } }]);
    });

    it('refuses forged, tampered and replayed deliveries without storing them', async () => {
      const body = JSON.stringify({ type: 'order.created', order: 18 });
      const headers = signed(body);
      const forged = await t.api.post('/api/plugins/webhook-inbox/webhooks/deliveries', undefined, { rawBody: body, headers: signed(body, 'not-the-secret-0123456') });
      expect(forged.status).toBe(401);
      expect(forged.body).toMatchObject({ code: 'webhook_signature_invalid' });
      const tampered = await t.api.post('/api/plugins/webhook-inbox/webhooks/deliveries', undefined, { rawBody: body.replace('18', '19'), headers });
      expect(tampered.status).toBe(401);
      const first = await t.api.post('/api/plugins/webhook-inbox/webhooks/deliveries', undefined, { rawBody: body, headers });
      expect(first.status, first.text).toBe(202);
      const replay = await t.api.post('/api/plugins/webhook-inbox/webhooks/deliveries', undefined, { rawBody: body, headers });
      expect(replay.status).toBe(409);
      const rows = await t.sql.query('select payload from plugin_webhook_inbox.deliveries order by id');
      expect(rows.rows.map((r: any) => r.payload.order)).toEqual([17, 18]);
    });
  });

  describe('scheduled-heartbeat (job)', () => {
    it('writes a heartbeat row when its job runs', async () => {
      const jobs = await t.api.get('/api/plugins/scheduled-heartbeat/jobs');
      expect(jobs.status, jobs.text).toBe(200);
      expect(jobs.body).toContainEqual(expect.objectContaining({ key: 'beat', schedule: '* * * * *' }));
      const trigger = await t.api.post('/api/plugins/scheduled-heartbeat/jobs/beat/trigger', {});
      expect(trigger.status, trigger.text).toBe(202);
      let status: any;
      for (let i = 0; i < 50; i++) {
        status = (await t.api.get('/api/plugins/scheduled-heartbeat/heartbeats')).body;
        if (status.count > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status.count).toBeGreaterThanOrEqual(1);
      expect(status.latest).toMatchObject({ id: expect.any(Number), beatAt: expect.any(String), invocationId: expect.any(String) });
      const rows = await t.sql.query('select invocation_id from plugin_scheduled_heartbeat.heartbeats');
      expect(rows.rows.map((r: any) => r.invocation_id)).toContain(status.latest.invocationId);
    });
  });

  describe('greeting-panel (UI slot)', () => {
    it('shows its slot and launcher while enabled, and feeds the slot through its data handler', async () => {
      const ui = await t.api.get('/api/plugins/ui-contributions');
      expect(ui.status).toBe(200);
      expect(ui.body.slots).toContainEqual({ pluginKey: 'greeting-panel', slot: 'company-dashboard', key: 'greeting', label: 'Greeting', order: 40, dataKey: 'greeting' });
      expect(ui.body.launchers).toContainEqual({ pluginKey: 'greeting-panel', key: 'wave', label: 'Wave', placement: 'company-toolbar', action: 'wave' });
      const data = await t.api.post('/api/plugins/greeting-panel/data/greeting', { companyId: company.id });
      expect(data.status, data.text).toBe(200);
      expect(data.body).toEqual({ title: 'Hello, Acme Examples!', lines: ['This panel is contributed by the greeting-panel plugin for Acme Examples.'] });
      const wave = await t.api.post('/api/plugins/greeting-panel/actions/wave', { companyId: company.id, params: { times: 3 } });
      expect(wave.status, wave.text).toBe(200);
      expect(wave.body).toEqual({ message: '👋👋👋 from Acme Examples' });
    });

    it('hides them after disable', async () => {
      const disabled = await t.api.post('/api/plugins/greeting-panel/disable', {});
      expect(disabled.status, disabled.text).toBe(200);
      const ui = await t.api.get('/api/plugins/ui-contributions');
      expect(ui.body.slots.filter((s: any) => s.pluginKey === 'greeting-panel')).toEqual([]);
      expect(ui.body.launchers.filter((l: any) => l.pluginKey === 'greeting-panel')).toEqual([]);
      const data = await t.api.post('/api/plugins/greeting-panel/data/greeting', { companyId: company.id });
      expect(data.status).toBe(404);
    });
  });
});
