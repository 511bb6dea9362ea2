import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyActivityChains } from '../../kernel/activity/verify-chain.ts';
import { AGENT_KEY_PREFIX, hashToken, mintToken } from '../../kernel/auth/tokens.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

let t: TestKernel;
let companyId: string;
let otherCompanyId: string;
let agentId: string;
let agentKey: string;
let otherAgentId: string;
beforeAll(async () => {
  t = await startTestKernel();
  companyId = await createCompany('Acme');
  otherCompanyId = await createCompany('Other');
  agentId = await createAgent(companyId);
  otherAgentId = await createAgent(otherCompanyId);
  agentKey = mintToken(AGENT_KEY_PREFIX);
  await t.sql.query(`insert into agent_api_keys (agent_id, company_id, name, key_hash, key_prefix) values ($1, $2, 'k', $3, 'svc_agent_')`,
    [agentId, companyId, hashToken(agentKey)]);
});
afterAll(async () => { await t?.stop(); });

async function createCompany(name: string): Promise<string> {
  return (await t.sql.query('insert into companies (name, issue_prefix) values ($1, $2) returning id',
    [name, `A${randomUUID().replace(/-/g, '').slice(0, 8)}`])).rows[0].id;
}

async function createAgent(company: string): Promise<string> {
  return (await t.sql.query(`insert into agents (company_id, name, url_key) values ($1, 'Agent', $2) returning id`,
    [company, `agent-${randomUUID().slice(0, 8)}`])).rows[0].id;
}

const path = (company: string) => `/api/companies/${company}/activity`;
const count = async () => (await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n as number;

describe('POST /api/companies/{companyId}/activity', () => {
  it('creates an entry with actorType defaulting to system and returns it', async () => {
    const res = await t.api.post(path(companyId), { actorId: 'deploy-bot', action: 'deploy.finished', entityType: 'deployment', entityId: 'd-1' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String), companyId, actorType: 'system', actorId: 'deploy-bot', action: 'deploy.finished',
      entityType: 'deployment', entityId: 'd-1', agentId: null, runId: null, details: null, createdAt: expect.any(String),
    });
    const row = (await t.sql.query('select * from activity_log where id = $1', [res.body.id])).rows[0];
    expect(row).toMatchObject({ company_id: companyId, actor_type: 'system', actor_id: 'deploy-bot', action: 'deploy.finished' });
    // No second, generic entry for the same request.
    expect((await t.sql.query('select count(*)::int as n from activity_log where company_id = $1', [companyId])).rows[0].n).toBe(1);
  });

  it('accepts agentId of the company and sanitises details', async () => {
    const res = await t.api.post(path(companyId), {
      actorType: 'agent', actorId: agentId, action: 'note.added', entityType: 'note', entityId: 'n-1', agentId: agentId.toUpperCase(),
      details: { password: 'hunter22', nested: { apiKey: 'abc', message: `used ${mintToken('svc_board_')}` }, count: 3 },
    });
    expect(res.status).toBe(201);
    expect(res.body.agentId).toBe(agentId);
    expect(res.body.details).toEqual({ password: '[REDACTED]', nested: { apiKey: '[REDACTED]', message: 'used [REDACTED]' }, count: 3 });
    const stored = (await t.sql.query('select details from activity_log where id = $1', [res.body.id])).rows[0].details;
    expect(stored).toEqual(res.body.details);
  });

  it('stores details whose long strings end inside an emoji: truncation never splits a surrogate pair', async () => {
    // 4,000 characters are kept: after one ASCII character the cut falls between the halves of an emoji.
    const note = `a${'😀'.repeat(2500)}`;
    const res = await t.api.post(path(companyId), { actorId: 'ops', action: 'note.added', entityType: 'note', entityId: 'n-2', details: { note } });
    expect(res.status, res.text).toBe(201);
    const stored = (await t.sql.query('select details from activity_log where id = $1', [res.body.id])).rows[0].details;
    expect(stored.note).toBe(`a${'😀'.repeat(1999)}…`);
    expect(stored.note.isWellFormed()).toBe(true);
  });

  it('refuses invalid bodies with 400 and foreign agents with 422, adding nothing', async () => {
    const before = await count();
    const valid = { actorId: 'x', action: 'a', entityType: 'e', entityId: '1' };
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ ...valid, actorId: undefined }, 'actorId'],
      [{ ...valid, action: undefined }, 'action'],
      [{ ...valid, entityType: undefined }, 'entityType'],
      [{ ...valid, entityId: undefined }, 'entityId'],
      [{ ...valid, action: '' }, 'action'],
      [{ ...valid, actorType: 'robot' }, 'actorType'],
      [{ ...valid, agentId: 'not-a-uuid' }, 'agentId'],
      [{ ...valid, details: 'text' }, 'details'],
      [{ ...valid, details: [1, 2] }, 'details'],
      [{ ...valid, entityId: 7 }, 'entityId'],
    ];
    for (const [body, field] of bad) {
      const res = await t.api.post(path(companyId), body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.issues.map((i: { path: string }) => i.path)).toContain(field);
    }
    const foreign = await t.api.post(path(companyId), { ...valid, agentId: otherAgentId });
    expect(foreign.status).toBe(422);
    expect(foreign.body).toEqual({ error: 'agentId must name an agent of this company', code: 'agent_not_in_company', details: { agentId: otherAgentId } });
    const unknown = await t.api.post(path(companyId), { ...valid, agentId: randomUUID() });
    expect(unknown.status).toBe(422);
    expect(await count()).toBe(before);
  });

  it('is board only: agent tokens get 403; unknown companies 404', async () => {
    const before = await count();
    const res = await t.api.post(path(companyId), { actorId: 'x', action: 'a', entityType: 'e', entityId: '1' }, { token: agentKey });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('board_required');
    const missing = await t.api.post(path(randomUUID()), { actorId: 'x', action: 'a', entityType: 'e', entityId: '1' });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('Company not found');
    expect((await t.api.post(path('nope'), {})).status).toBe(404);
    expect(await count()).toBe(before);
  });

  it('keeps the chain intact under 50 concurrent posts', async () => {
    const company = await createCompany('Busy');
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      t.api.post(path(company), { actorId: 'load', action: 'load.tick', entityType: 'tick', entityId: String(i) })));
    expect(results.every((r) => r.status === 201)).toBe(true);
    const seqs = (await t.sql.query('select seq from activity_log where company_id = $1 order by seq', [company])).rows.map((r) => Number(r.seq));
    expect(seqs).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    const report = await verifyActivityChains(t.kernel.services.db, company);
    expect(report).toEqual({ chains: 1, entries: 50, firstBreak: null });
  });
});

describe('GET /api/companies/{companyId}/activity', () => {
  let company: string;
  let ids: string[];
  beforeAll(async () => {
    company = await createCompany('Feed');
    const agent = await createAgent(company);
    ids = [];
    const entries = [
      { entityType: 'issue', entityId: 'I-1', agentId: agent },
      { entityType: 'issue', entityId: 'I-2' },
      { entityType: 'project', entityId: 'I-1' },
      { entityType: 'issue', entityId: 'I-1' },
    ];
    for (const entry of entries) {
      const res = await t.api.post(path(company), { actorId: 'feeder', action: 'feed.item', ...entry });
      ids.push(res.body.id);
    }
  });

  it('lists newest first without pagination', async () => {
    const res = await t.api.get(path(company));
    expect(res.status).toBe(200);
    expect(res.body.map((e: { id: string }) => e.id)).toEqual([...ids].reverse());
  });

  it('filters by exact agentId, entityType and entityId', async () => {
    const agent = (await t.sql.query('select agent_id from activity_log where id = $1', [ids[0]])).rows[0].agent_id;
    const byAgent = await t.api.get(`${path(company)}?agentId=${agent}`);
    expect(byAgent.body.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
    const byType = await t.api.get(`${path(company)}?entityType=issue`);
    expect(byType.body.map((e: { id: string }) => e.id)).toEqual([ids[3], ids[1], ids[0]]);
    const both = await t.api.get(`${path(company)}?entityType=issue&entityId=I-1`);
    expect(both.body.map((e: { id: string }) => e.id)).toEqual([ids[3], ids[0]]);
    const partial = await t.api.get(`${path(company)}?entityType=iss`);
    expect(partial.body).toEqual([]);
    const badAgent = await t.api.get(`${path(company)}?agentId=nope`);
    expect(badAgent.status).toBe(400);
    expect(badAgent.body.issues[0].path).toBe('agentId');
  });

  it('filters by actorType and actorId, alone or with the entity filters', async () => {
    const byUser = await t.api.post(path(company), { actorType: 'user', actorId: 'user-7', action: 'feed.item', entityType: 'issue', entityId: 'I-9' });
    const byAgent = await t.api.post(path(company), { actorType: 'agent', actorId: 'user-7', action: 'feed.item', entityType: 'project', entityId: 'P-1' });
    const users = await t.api.get(`${path(company)}?actorType=user`);
    expect(users.body.map((e: { id: string }) => e.id)).toEqual([byUser.body.id]);
    // The same id under two actor types: the type tells them apart.
    const actor = await t.api.get(`${path(company)}?actorId=user-7`);
    expect(actor.body.map((e: { id: string }) => e.id)).toEqual([byAgent.body.id, byUser.body.id]);
    const agentActor = await t.api.get(`${path(company)}?actorType=agent&actorId=user-7`);
    expect(agentActor.body.map((e: { id: string }) => e.id)).toEqual([byAgent.body.id]);
    const withEntity = await t.api.get(`${path(company)}?actorId=user-7&entityType=issue`);
    expect(withEntity.body.map((e: { id: string }) => e.id)).toEqual([byUser.body.id]);
    const system = await t.api.get(`${path(company)}?actorType=system&actorId=feeder`);
    expect(system.body.map((e: { id: string }) => e.id)).toEqual([...ids].reverse());
    const badType = await t.api.get(`${path(company)}?actorType=robot`);
    expect(badType.status).toBe(400);
    expect(badType.body.code).toBe('validation_failed');
    expect(badType.body.issues[0].path).toBe('actorType');
  });

  it('lets agents read their own company only', async () => {
    expect((await t.api.get(path(companyId), { token: agentKey })).status).toBe(200);
    const other = await t.api.get(path(otherCompanyId), { token: agentKey });
    expect(other.status).toBe(403);
    expect((await t.api.get(path(randomUUID()))).status).toBe(404);
  });

  it('masks the host user name in served details when censorUsernameInLogs is on', async () => {
    const username = userInfo().username;
    const company2 = await createCompany('Paths');
    const created = await t.api.post(path(company2), {
      actorId: 'x', action: 'file.read', entityType: 'file', entityId: 'f', details: { path: `/home/${username}/work/notes.md` },
    });
    const plain = await t.api.get(path(company2));
    expect(plain.body[0].details.path).toBe(`/home/${username}/work/notes.md`);
    await t.api.patch('/api/instance/settings/general', { censorUsernameInLogs: true });
    try {
      const masked = await t.api.get(path(company2));
      expect(masked.body[0].details.path).toBe(`/home/${username[0]}${'*'.repeat(username.length - 1)}/work/notes.md`);
      // The stored entry keeps the original: the log is append-only.
      expect((await t.sql.query('select details from activity_log where id = $1', [created.body.id])).rows[0].details.path)
        .toBe(`/home/${username}/work/notes.md`);
    } finally {
      await t.api.patch('/api/instance/settings/general', { censorUsernameInLogs: false });
    }
  });
});
