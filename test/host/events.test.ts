import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/event-fx', import.meta.url));
const KEY = 'event-fx';
let t: TestKernel;

async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs: number, what: string): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const companiesNamed = async (name: string) => (await t.sql.query('select count(*)::int as n from companies where name = $1', [name])).rows[0].n;
const recorded = async (event: string, companyId: string) => (await t.sql.query('select payload, invocation from plugin_eventfx.events where event = $1 and company_id = $2', [event, companyId])).rows;
const logs = async () => (await t.api.get(`/api/plugins/${KEY}/logs`)).body.logs as Array<{ level: string; message: string }>;

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FIXTURE);
});
afterAll(async () => { await t?.stop(); });

describe('in-transaction hooks', () => {
  it('let a plugin veto a kernel change: the request fails and nothing is created', async () => {
    const activityBefore = (await t.sql.query("select count(*)::int as n from activity_log where action = 'company.created'")).rows[0].n;
    const res = await t.api.post('/api/companies', { name: 'forbidden' });
    expect(res.status, res.text).toBe(422);
    expect(res.body).toEqual({
      error: 'Event fixture (event-fx) rejected company.created: companies may not be called "forbidden"',
      code: 'plugin_hook_rejected',
      details: { plugin: KEY, event: 'company.created', reason: 'forbidden_name' },
    });
    expect(await companiesNamed('forbidden')).toBe(0);
    expect((await t.sql.query("select count(*)::int as n from activity_log where action = 'company.created'")).rows[0].n).toBe(activityBefore);
    // The after-commit subscriber never hears of a change that rolled back.
    await new Promise((r) => setTimeout(r, 300));
    expect((await t.sql.query("select count(*)::int as n from plugin_eventfx.events where payload -> 'company' ->> 'name' = 'forbidden'")).rows[0].n).toBe(0);
    expect((await logs()).some((l) => l.message.startsWith('hook company.created rejected the change: forbidden_name'))).toBe(true);
  });

  it('answer 409 when the plugin reports a conflict', async () => {
    const res = await t.api.post('/api/companies', { name: 'conflicted' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('plugin_hook_rejected');
    expect(res.body.error).toBe('Event fixture (event-fx) rejected company.created: that name is reserved elsewhere');
    expect(await companiesNamed('conflicted')).toBe(0);
  });

  it('are read-only validators: a hook that writes fails closed, and nothing is written', async () => {
    const res = await t.api.post('/api/companies', { name: 'hook-writes' });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('plugin_hook_rejected');
    expect(res.body.details).toMatchObject({ plugin: KEY, event: 'company.created', reason: 'sql_25006' });
    expect(await companiesNamed('hook-writes')).toBe(0);
    expect((await t.sql.query("select count(*)::int as n from plugin_eventfx.events where payload -> 'company' ->> 'name' = 'hook-writes'")).rows[0].n).toBe(0);
  });

  it('let other changes through', async () => {
    const company = await createCompany(t.api, { name: 'allowed' });
    expect(company.name).toBe('allowed');
  });
});

describe('after-commit subscribers', () => {
  it('receive the event with company-scoped identity after the commit', async () => {
    const company = await createCompany(t.api, { name: 'Subscribed Co' });
    const [row] = await waitFor(async () => { const rows = await recorded('company.created', company.id); return rows.length ? rows : undefined; }, 5000, 'company.created delivery');
    expect(row.payload).toMatchObject({ companyId: company.id, company: { id: company.id, name: 'Subscribed Co' }, actor: { actorType: 'user', actorId: 'local-board' } });
    expect(row.invocation).toMatchObject({ kind: 'event', target: 'company.created', companyId: company.id, actor: { type: 'system', id: 'events', agentId: null }, runId: null });
    const patched = await t.api.patch(`/api/companies/${company.id}`, { description: 'now with a description' });
    expect(patched.status, patched.text).toBe(200);
    const [updated] = await waitFor(async () => { const rows = await recorded('company.updated', company.id); return rows.length ? rows : undefined; }, 5000, 'company.updated delivery');
    expect(updated.payload.changes).toMatchObject({ description: 'now with a description' });
  });

  it('do not hold up the request, and reach the subscriber in commit order for one entity', async () => {
    const started = Date.now();
    const slow = await createCompany(t.api, { name: 'slow-subscriber' });
    expect(Date.now() - started).toBeLessThan(1200);
    // company.created is still being handled (slowly) when company.updated of the same company commits.
    expect((await t.api.patch(`/api/companies/${slow.id}`, { description: 'changed while the subscriber was busy' })).status).toBe(200);
    const rows = await waitFor(async () => {
      const found = (await t.sql.query('select event from plugin_eventfx.events where company_id = $1 order by id', [slow.id])).rows;
      return found.length === 2 ? found : undefined;
    }, 8000, 'both deliveries');
    expect(rows.map((r: any) => r.event)).toEqual(['company.created', 'company.updated']);
  });

  it('never fail the request when they fail; the failure goes to the plugin logs', async () => {
    const company = await createCompany(t.api, { name: 'explode-after' });
    const line = await waitFor(async () => (await logs()).find((l) => l.message.startsWith('event company.created ') && l.message.includes('subscriber blew up')), 5000, 'the failure log line');
    expect(line.level).toBe('warn');
    expect(line.message).toContain('subscriber blew up');
    expect((await t.api.get(`/api/companies/${company.id}`)).status).toBe(200);
    expect(await recorded('company.created', company.id)).toEqual([]);
  });
});

describe('lifecycle and bounds', () => {
  it('unsubscribes on disable and subscribes again on enable', async () => {
    expect((await t.api.post(`/api/plugins/${KEY}/disable`, {})).status).toBe(200);
    const unvetoed = await createCompany(t.api, { name: 'forbidden' });
    await new Promise((r) => setTimeout(r, 300));
    expect(await recorded('company.created', unvetoed.id)).toEqual([]);
    expect((await t.api.post(`/api/plugins/${KEY}/enable`, {})).status).toBe(200);
    const res = await t.api.post('/api/companies', { name: 'forbidden' });
    expect(res.status).toBe(422);
    expect(await companiesNamed('forbidden')).toBe(1);
    // Enabling twice does not subscribe twice.
    const company = await createCompany(t.api, { name: 'Once Only' });
    await waitFor(async () => (await recorded('company.created', company.id)).length > 0, 5000, 'delivery');
    await new Promise((r) => setTimeout(r, 300));
    expect(await recorded('company.created', company.id)).toHaveLength(1);
  });

  it('bounds the wait on a hook by the plugin call deadline, and a hook that never answers vetoes', async () => {
    const started = Date.now();
    const res = await t.api.post('/api/companies', { name: 'slow-hook' });
    const elapsed = Date.now() - started;
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('plugin_hook_rejected');
    expect(res.body.details).toMatchObject({ plugin: KEY, event: 'company.created', reason: 'plugin_timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(1900);
    expect(elapsed).toBeLessThan(6000);
    expect(await companiesNamed('slow-hook')).toBe(0);
    // The kernel kept serving, and the plugin comes back after its worker restarts.
    await waitFor(async () => (await t.api.get(`/api/plugins/${KEY}/health`)).body.healthy, 15_000, 'the plugin to be healthy again');
    const again = await t.api.post('/api/companies', { name: 'forbidden' });
    expect(again.status).toBe(422);
  }, 30_000);
});
