import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_PARTY_PLUGINS, startPeerKernel, startTestKernel, type Api, type TestKernel } from '../../support/harness.ts';
import { addMember, boardToken, createAgent, createCompany, insertUser } from '../../support/fixtures.ts';
import { eventsSettled } from '../../support/events.ts';

/**
 * The board user's inbox (GET /api/companies/{companyId}/inbox) and its read marks, through
 * HTTP against a real kernel with the first-party plugins: what needs a human, marked read per
 * user and company, kept in the database.
 */
let t: TestKernel;
let company: any;
let agent: any;
let alice: { id: string; handle: string; api: Api };
let bob: { id: string; handle: string; api: Api };
let items: { approval: string; hard: string; soft: string; blocked: string; run: string; mention: string };

async function boardUser(companyId: string) {
  const id = await insertUser(t);
  await addMember(t, companyId, id, 'owner');
  const { rows } = await t.sql.query('select email from users where id = $1', [id]);
  const token = await boardToken(t, id);
  return { id, handle: String(rows[0].email).split('@')[0]!, api: t.api.as(token) };
}

const inboxPath = (companyId = company.id) => `/api/companies/${companyId}/inbox`;
const marks = async () => (await t.sql.query('select company_id::text, user_id, item_id from plugin_work.inbox_reads order by user_id, item_id')).rows;

beforeAll(async () => {
  t = await startTestKernel({}, { firstPartyDir: FIRST_PARTY_PLUGINS });
  company = await createCompany(t.api, { name: 'Inbox Board Co', requireBoardApprovalForNewAgents: true });
  alice = await boardUser(company.id);
  bob = await boardUser(company.id);
  // A hire waits for the board: a pending approval. The hired agent is created directly (board create).
  const hire = await t.api.post(`/api/companies/${company.id}/agent-hires`, { name: 'Applicant' });
  expect(hire.status, hire.text).toBe(201);
  agent = await createAgent(t.api, company.id, { name: 'Spender', budgetMonthlyCents: 100 });
  await eventsSettled(t);
  const blocked = await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Stuck on a decision', status: 'blocked' });
  const plain = await t.api.post(`/api/companies/${company.id}/issues`, { title: 'Needs eyes' });
  const mention = await t.api.post(`/api/issues/${plain.body.id}/comments`, { body: `@${alice.handle} can you decide?` });
  expect(mention.status, mention.text).toBe(201);
  // Not a mention of alice: a longer name that starts like hers, and an email address.
  await t.api.post(`/api/issues/${plain.body.id}/comments`, { body: `@${alice.handle}-bot and ${alice.handle}@example.test` });
  const { runs, db } = t.kernel.services;
  const opened = await db.transaction((tx) => runs.open(tx, { agentId: agent.id, companyId: company.id, invocationSource: 'on_demand' }));
  await db.transaction((tx) => runs.close(tx, opened.run.runId, { status: 'failed' }));
  const good = await db.transaction((tx) => runs.open(tx, { agentId: agent.id, companyId: company.id, invocationSource: 'on_demand' }));
  await db.transaction((tx) => runs.close(tx, good.run.runId, { status: 'succeeded' }));
  // Past its budget: a soft and a hard incident open (and the agent is paused).
  const cost = await t.api.post(`/api/companies/${company.id}/cost-events`, { agentId: agent.id, provider: 'alpha', model: 'alpha-large', costCents: 150, occurredAt: new Date().toISOString() });
  expect(cost.status, cost.text).toBe(201);
  await eventsSettled(t);
  const incidents = (await t.sql.query('select id, threshold_type from plugin_costs.budget_incidents where company_id = $1 and status = $2 order by threshold_type', [company.id, 'open'])).rows;
  expect(incidents.map((row) => row.threshold_type)).toEqual(['hard', 'soft']);
  items = {
    approval: `approval:${hire.body.approval.id}`, hard: `incident:${incidents[0].id}`, soft: `incident:${incidents[1].id}`, blocked: `blocked:${blocked.body.id}`,
    run: `run:${opened.run.runId}`, mention: `comment:${mention.body.id}`,
  };
});
afterAll(async () => { await t?.stop(); });

describe('GET /api/companies/{companyId}/inbox', () => {
  it('lists pending approvals, open budget incidents, blocked issues, failed runs and mentions, each linked to its page, all unread', async () => {
    const res = await alice.api.get(inboxPath());
    expect(res.status, res.text).toBe(200);
    expect(res.body.userId).toBe(alice.id);
    expect(res.body.mentionHandle).toBe(alice.handle);
    const byId = new Map(res.body.items.map((item: any) => [item.id, item]));
    expect([...byId.keys()].sort()).toEqual(Object.values(items).sort());
    const c = `/companies/${company.id}`;
    expect(byId.get(items.approval)).toMatchObject({ kind: 'approval', href: `${c}/approvals`, read: false });
    expect(byId.get(items.hard)).toMatchObject({ kind: 'budget_incident', href: `${c}/costs`, read: false, title: expect.stringMatching(/^Budget hard stop: Spender at \$1\.50 of \$\d+\.\d\d$/) });
    expect(byId.get(items.soft)).toMatchObject({ kind: 'budget_incident', title: expect.stringMatching(/^Budget warning: Spender at \$1\.50 of \$\d+\.\d\d$/), detail: null });
    expect(byId.get(items.blocked)).toMatchObject({ kind: 'blocked_issue', href: `${c}/issues/${items.blocked.slice(8)}`, detail: 'Stuck on a decision' });
    expect(byId.get(items.run)).toMatchObject({ kind: 'failed_run', href: `${c}/runs/${items.run.slice(4)}`, title: 'Run failed: Spender' });
    expect(byId.get(items.mention)).toMatchObject({ kind: 'mention', href: expect.stringMatching(new RegExp(`^${c}/issues/[0-9a-f-]{36}#comment-`)) });
    expect(res.body.counts).toMatchObject({ total: 6, unread: 6, byKind: { approval: { total: 1, unread: 1 }, budget_incident: { total: 2, unread: 2 }, mention: { total: 1, unread: 1 } } });
    // The mention is alice's alone: bob's inbox has the others.
    const other = await bob.api.get(inboxPath());
    expect(other.body.items.map((item: any) => item.id).sort()).toEqual(Object.values(items).filter((id) => id !== items.mention).sort());
  });

  it('writes nothing: no read mark, no activity entry', async () => {
    const activity = (await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n;
    const before = await marks();
    for (let i = 0; i < 3; i++) expect((await alice.api.get(inboxPath())).status).toBe(200);
    expect(await marks()).toEqual(before);
    expect((await t.sql.query('select count(*)::int as n from activity_log')).rows[0].n).toBe(activity);
  });

  it("refuses another company's inbox, an agent and a query it does not know", async () => {
    const other = await createCompany(t.api, { name: 'Not Alice Co' });
    const refused = await alice.api.get(inboxPath(other.id));
    expect([403, 404]).toContain(refused.status);
    expect(refused.body).toMatchObject({ error: expect.any(String), code: expect.any(String) });
    const bad = await alice.api.get(`${inboxPath()}?kind=approval`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: expect.any(String) });
  });
});

describe('POST /api/companies/{companyId}/inbox/read', () => {
  it('marks items read for the caller only, lowers the counts, and keeps them read across reads', async () => {
    const res = await alice.api.post(`${inboxPath()}/read`, { itemIds: [items.approval, items.run, items.run] });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ marked: 2, counts: { total: 6, unread: 4, byKind: { approval: { total: 1, unread: 0 }, failed_run: { total: 1, unread: 0 } } } });
    const again = await alice.api.post(`${inboxPath()}/read`, { itemIds: [items.approval] });
    expect(again.body.counts.unread).toBe(4);
    const inbox = await alice.api.get(inboxPath());
    expect(inbox.body.items.filter((item: any) => item.read).map((item: any) => item.id).sort()).toEqual([items.approval, items.run].sort());
    // Bob's marks are his own: he still has every item unread.
    expect((await bob.api.get(inboxPath())).body.counts.unread).toBe(5);
    expect(await marks()).toEqual([items.approval, items.run].sort().map((item_id) => ({ company_id: company.id, user_id: alice.id, item_id })));
  });

  it('refuses a bad body with a 400 JSON error and writes nothing', async () => {
    const before = await marks();
    for (const body of [{}, { itemIds: [] }, { itemIds: ['approval:nope'] }, { itemIds: [`secret:${randomUUID()}`] }, { itemIds: 'run' }, { itemIds: [items.blocked], extra: 1 }]) {
      const res = await alice.api.post(`${inboxPath()}/read`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ error: expect.any(String), code: expect.any(String) });
    }
    expect(await marks()).toEqual(before);
  });

  it("refuses marks in another company's inbox and writes nothing", async () => {
    const other = await createCompany(t.api, { name: 'Elsewhere Co' });
    const before = await marks();
    const res = await bob.api.post(`${inboxPath(other.id)}/read`, { itemIds: [items.blocked] });
    expect([403, 404]).toContain(res.status);
    expect(res.body).toMatchObject({ code: expect.any(String) });
    expect(await marks()).toEqual(before);
  });
});

describe('POST /api/companies/{companyId}/inbox/read-all', () => {
  it("marks every item of the caller's inbox read, and only the caller's", async () => {
    const res = await bob.api.post(`${inboxPath()}/read-all`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ marked: 5, counts: { total: 5, unread: 0 } });
    expect((await alice.api.get(inboxPath())).body.counts.unread).toBe(4);
    // A new item arrives unread.
    const fresh = await t.api.post(`/api/companies/${company.id}/issues`, { title: 'New trouble', status: 'blocked' });
    const after = await bob.api.get(inboxPath());
    expect(after.body.counts).toMatchObject({ total: 6, unread: 1 });
    expect(after.body.items.find((item: any) => !item.read).id).toBe(`blocked:${fresh.body.id}`);
  });
});

describe('the agent inboxes', () => {
  it('are unchanged: inbox-lite still answers a bare array for an agent', async () => {
    const keyRes = await t.api.post(`/api/agents/${agent.id}/keys`, { name: 'inbox' });
    expect(keyRes.status, keyRes.text).toBe(201);
    const res = await t.api.get('/api/agents/me/inbox-lite', { token: keyRes.body.token });
    expect(res.status, res.text).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    // The board inbox is not an agent's.
    expect((await t.api.get(inboxPath(), { token: keyRes.body.token })).status).toBe(403);
  });
});

describe('read marks across processes, the local board, and without the costs plugin', () => {
  it('are read back by another Keel process on the same database', async () => {
    const peer = await startPeerKernel(t, {}, { firstPartyDir: FIRST_PARTY_PLUGINS });
    try {
      const token = await boardToken(t, alice.id);
      const seen = await peer.api.get(inboxPath(), { token });
      expect(seen.status, seen.text).toBe(200);
      expect(seen.body.items.filter((item: any) => item.read).map((item: any) => item.id).sort()).toEqual([items.approval, items.run].sort());
      // A mark made there is seen here.
      expect((await peer.api.post(`${inboxPath()}/read`, { itemIds: [items.mention] }, { token })).status).toBe(200);
      expect((await alice.api.get(inboxPath())).body.items.find((item: any) => item.id === items.mention).read).toBe(true);
    } finally {
      await peer.stop();
    }
  });

  it('mention the local board as @board, and mark for it apart from the users', async () => {
    const res = await t.api.get(inboxPath());
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ userId: 'local-board', mentionHandle: 'board' });
    expect(res.body.items.some((item: any) => item.read)).toBe(false);
  });

  it('answers without budget incidents while the costs plugin is disabled', async () => {
    expect((await t.api.post('/api/plugins/costs/disable', {})).status).toBe(200);
    try {
      const res = await alice.api.get(inboxPath());
      expect(res.status, res.text).toBe(200);
      expect(res.body.counts.byKind.budget_incident).toEqual({ total: 0, unread: 0 });
      expect(res.body.items.map((item: any) => item.id)).toContain(items.approval);
    } finally {
      expect((await t.api.post('/api/plugins/costs/enable', {})).status).toBe(200);
    }
  });
});
