import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyActivityChains } from '../../kernel/activity/verify-chain.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';
import { addMember, agentToken, createCompany, insertAgent, insertUser, snapshot, uploadLogo } from './companies-fixtures.ts';

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

async function agentRow(id: string) {
  const { rows } = await t.sql.query('select status, pause_reason, paused_at from agents where id = $1', [id]);
  return rows[0];
}

describe('POST /api/companies/:companyId/archive', () => {
  it('archives the company, pauses its working agents and leaves the others alone', async () => {
    const company = await createCompany(t);
    const idle = await insertAgent(t, company.id, { status: 'idle' });
    const running = await insertAgent(t, company.id, { status: 'running' });
    const errored = await insertAgent(t, company.id, { status: 'error' });
    const pending = await insertAgent(t, company.id, { status: 'pending_approval' });
    const terminated = await insertAgent(t, company.id, { status: 'terminated' });
    const paused = await insertAgent(t, company.id, { status: 'paused', pauseReason: 'budget' });
    const other = await createCompany(t);
    const bystander = await insertAgent(t, other.id, { status: 'idle' });
    const token = await agentToken(t, running, company.id);
    expect((await t.api.get(`/api/companies/${company.id}`, { token })).status).toBe(200);
    expect(t.kernel.services.authCache.agents.get(running)?.status).toBe('running');

    const statusEvents: any[] = [];
    const archivedEvents: any[] = [];
    const offStatus = t.kernel.services.events.hook('agent.status_changed', (_tx, payload) => { statusEvents.push(payload); });
    const offArchived = t.kernel.services.events.hook('company.archived', (_tx, payload) => { archivedEvents.push(payload); });
    try {
      const res = await t.api.post(`/api/companies/${company.id}/archive`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: company.id, status: 'archived' });
      const expectedPaused = [idle, running, errored].sort();
      for (const id of expectedPaused) expect(await agentRow(id)).toMatchObject({ status: 'paused', pause_reason: 'company_archived', paused_at: expect.any(Date) });
      expect((await agentRow(pending)).status).toBe('pending_approval');
      expect((await agentRow(terminated)).status).toBe('terminated');
      expect(await agentRow(paused)).toMatchObject({ status: 'paused', pause_reason: 'budget' });
      expect((await agentRow(bystander)).status).toBe('idle');
      const { rows } = await t.sql.query("select details from activity_log where company_id = $1 and action = 'company.archived'", [company.id]);
      expect(rows).toEqual([{ details: { previousStatus: 'active', pausedAgentIds: expectedPaused } }]);
      const { rows: companyRows } = await t.sql.query('select archived_at from companies where id = $1', [company.id]);
      expect(companyRows[0].archived_at).not.toBeNull();
      expect(archivedEvents).toEqual([{ companyId: company.id, actor: { actorType: 'user', actorId: 'local-board' } }]);
      expect(statusEvents.map((e) => e.agentId).sort()).toEqual(expectedPaused);
      expect(statusEvents.find((e) => e.agentId === running)).toMatchObject({ from: 'running', to: 'paused', reason: 'company_archived' });
    } finally {
      offStatus();
      offArchived();
    }
    // The paused agent was evicted from the credential cache, so the next request sees its new status.
    expect(t.kernel.services.authCache.agents.get(running)).toBeUndefined();
    const list = await t.api.get('/api/companies');
    expect(list.body.some((c: any) => c.id === company.id)).toBe(false);
  });

  it('is idempotent on an archived company', async () => {
    const company = await createCompany(t);
    await t.api.post(`/api/companies/${company.id}/archive`);
    const before = await snapshot(t);
    const again = await t.api.post(`/api/companies/${company.id}/archive`);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('archived');
    expect(await snapshot(t)).toEqual(before);
  });

  it('refuses agents and unknown companies', async () => {
    const company = await createCompany(t);
    const token = await agentToken(t, await insertAgent(t, company.id, { role: 'ceo' }), company.id);
    const res = await t.api.post(`/api/companies/${company.id}/archive`, undefined, { token });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'Board access required', code: 'board_required' });
    expect((await t.api.get(`/api/companies/${company.id}`)).body.status).toBe('active');
    const unknown = await t.api.post('/api/companies/00000000-0000-4000-8000-000000000000/archive');
    expect(unknown.status).toBe(404);
  });
});

describe('DELETE /api/companies/:companyId', () => {
  it('removes the company and everything of it, leaving an instance-level record and verifiable chains', async () => {
    const company = await createCompany(t, { name: 'Doomed Corp' });
    const survivor = await createCompany(t, { name: 'Survivor' });
    const agent = await insertAgent(t, company.id, { role: 'ceo' });
    const token = await agentToken(t, agent, company.id);
    const user = await insertUser(t);
    await addMember(t, company.id, user);
    await addMember(t, survivor.id, user);
    await t.sql.query(`insert into permission_grants (company_id, principal_type, principal_id, permission_key) values ($1, 'agent', $2, 'tasks:assign')`, [company.id, agent]);
    await t.sql.query(`insert into approvals (company_id, type, subject_agent_id) values ($1, 'hire_agent', $2)`, [company.id, agent]);
    await t.sql.query(`insert into resource_memberships (company_id, user_id, resource_type, resource_id, state) values ($1, $2, 'agent', $3, 'left')`, [company.id, user, agent]);
    const logo = await uploadLogo(t, company.id);
    await t.api.patch(`/api/companies/${company.id}`, { logoAssetId: logo.assetId, description: 'lots of activity' });
    await t.api.patch(`/api/companies/${survivor.id}`, { description: 'kept' });
    expect((await t.api.get(`/api/companies/${company.id}`, { token })).status).toBe(200);
    const { rows: activityBefore } = await t.sql.query('select count(*)::int as n from activity_log where company_id = $1', [company.id]);
    expect(activityBefore[0].n).toBeGreaterThanOrEqual(3);
    const survivorActivity = (await t.sql.query('select count(*)::int as n from activity_log where company_id = $1', [survivor.id])).rows[0].n;

    const deleted: any[] = [];
    const off = t.kernel.services.events.hook('company.deleted', (_tx, payload) => { deleted.push(payload); });
    try {
      const res = await t.api.delete(`/api/companies/${company.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ok: true });
    } finally {
      off();
    }
    expect(deleted).toEqual([{ companyId: company.id, actor: { actorType: 'user', actorId: 'local-board' } }]);

    expect((await t.api.get(`/api/companies/${company.id}`)).status).toBe(404);
    for (const [table, column] of [
      ['companies', 'id'], ['agents', 'company_id'], ['agent_api_keys', 'company_id'], ['company_memberships', 'company_id'],
      ['permission_grants', 'company_id'], ['approvals', 'company_id'], ['assets', 'company_id'], ['resource_memberships', 'company_id'],
      ['activity_log', 'company_id'],
    ]) {
      const { rows } = await t.sql.query(`select count(*)::int as n from ${table} where ${column} = $1`, [company.id]);
      expect({ table, n: rows[0].n }).toEqual({ table, n: 0 });
    }
    const { rows: heads } = await t.sql.query('select 1 from activity_chain_heads where chain_key = $1', [company.id]);
    expect(heads).toHaveLength(0);
    const { rows: record } = await t.sql.query("select company_id, action, entity_type, entity_id, actor_id, details from activity_log where entity_id = $1 and action = 'company.deleted'", [company.id]);
    expect(record).toEqual([{
      company_id: null, action: 'company.deleted', entity_type: 'company', entity_id: company.id, actor_id: 'local-board',
      details: { name: 'Doomed Corp', issuePrefix: company.issuePrefix, purgedActivityEntries: activityBefore[0].n },
    }]);
    // The other company, its activity and the user's other membership are untouched.
    expect((await t.api.get(`/api/companies/${survivor.id}`)).body.description).toBe('kept');
    expect((await t.sql.query('select count(*)::int as n from activity_log where company_id = $1', [survivor.id])).rows[0].n).toBe(survivorActivity);
    expect((await t.sql.query('select count(*)::int as n from company_memberships where principal_id = $1', [user])).rows[0].n).toBe(1);
    // The deleted company's agent key no longer authenticates.
    expect((await t.api.get(`/api/companies/${survivor.id}`, { token })).status).toBe(401);

    const report = await verifyActivityChains(t.kernel.services.db);
    expect(report.firstBreak).toBeNull();
    expect(report.entries).toBeGreaterThan(0);
  });

  it('keeps the activity log append-only outside the purge', async () => {
    const company = await createCompany(t);
    await expect(t.sql.query('delete from activity_log where company_id = $1', [company.id])).rejects.toThrow(/append-only/);
    await expect(t.sql.query("update activity_log set action = 'x' where company_id = $1", [company.id])).rejects.toThrow(/append-only/);
  });

  it('refuses agents and answers 404 once the company is gone', async () => {
    const company = await createCompany(t);
    const token = await agentToken(t, await insertAgent(t, company.id, { role: 'ceo' }), company.id);
    const before = await snapshot(t);
    const byAgent = await t.api.delete(`/api/companies/${company.id}`, { token });
    expect(byAgent.status).toBe(403);
    expect(byAgent.body.code).toBe('board_required');
    expect(await snapshot(t)).toEqual(before);
    expect((await t.api.delete(`/api/companies/${company.id}`)).status).toBe(200);
    const again = await t.api.delete(`/api/companies/${company.id}`);
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('Company not found');
    expect((await verifyActivityChains(t.kernel.services.db)).firstBreak).toBeNull();
  });
});
