import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../support/harness.ts';

/**
 * One writer per fact (issue 31, point 4): an activity entry is inserted by
 * keel_private.append_activities alone, a pause's hold placed and lifted by
 * keel_private.change_hold alone, whoever decides it (a plugin, the archive cascade, the board).
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ACTIVITY_INSERT = /insert\s+into\s+(public\.)?activity_log\b/i;
const HOLD_WRITE = /(insert\s+into|update|delete\s+from)\s+(public\.)?scope_holds\b/i;

let t: TestKernel;
beforeAll(async () => { t = await startTestKernel(); });
afterAll(async () => { await t?.stop(); });

/** Every function of the database (the kernel's and each plugin's schema) whose body matches. */
async function functionsWhoseBody(pattern: RegExp): Promise<string[]> {
  const { rows } = await t.sql.query<{ name: string; body: string }>(
    `select n.nspname || '.' || p.proname as name, p.prosrc as body
       from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname not in ('pg_catalog', 'information_schema')`);
  return rows.filter((row) => pattern.test(row.body)).map((row) => row.name).sort();
}

/** The TypeScript sources of the kernel, the SDK and the first-party plugins (migrations aside) that match. */
function sourcesMatching(pattern: RegExp): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'migrations' && entry.name !== 'dist') walk(path);
      } else if (entry.name.endsWith('.ts') && pattern.test(readFileSync(path, 'utf8'))) {
        found.push(relative(ROOT, path));
      }
    }
  };
  for (const top of ['kernel', 'sdk', 'plugins']) walk(join(ROOT, top));
  return found.sort();
}

async function holds(scopeId: string) {
  return (await t.sql.query('select holder, reason from scope_holds where scope_id = $1 order by created_at, holder, reason', [scopeId])).rows;
}

describe('one writer per fact', () => {
  it('inserts activity entries through keel_private.append_activities alone', async () => {
    expect(await functionsWhoseBody(ACTIVITY_INSERT)).toEqual(['keel_private.append_activities']);
    expect(sourcesMatching(ACTIVITY_INSERT)).toEqual([]);
  });

  it('places and lifts holds through keel_private.change_hold alone', async () => {
    expect(await functionsWhoseBody(HOLD_WRITE)).toEqual(['keel_private.change_hold']);
    expect(sourcesMatching(HOLD_WRITE)).toEqual([]);
  });
});

describe("the board's holds through the one writer", () => {
  it("pauses an agent with the board's hold and resumes it by lifting every hold, naming the others'", async () => {
    const company = await createCompany(t.api);
    const agent = await createAgent(t.api, company.id);
    const paused = await t.api.post(`/api/agents/${agent.id}/pause`, { reason: 'maintenance' });
    expect([paused.status, paused.body.status, paused.body.pauseReason]).toEqual([200, 'paused', 'maintenance']);
    expect(await holds(agent.id)).toEqual([{ holder: 'operator', reason: 'maintenance' }]);
    // A plugin's hold on top, as ctx.agents.pause places it: the status stays, the reason too.
    await t.sql.query(`select keel_private.change_hold($1, 'agent', $2, 'plugin:costs', 'budget_hard_stop', true)`, [company.id, agent.id]);
    expect((await t.api.get(`/api/agents/${agent.id}`)).body).toMatchObject({ status: 'paused', pauseReason: 'maintenance' });

    const resumed = await t.api.post(`/api/agents/${agent.id}/resume`, {});
    expect([resumed.status, resumed.body.status, resumed.body.pauseReason]).toEqual([200, 'idle', null]);
    expect(await holds(agent.id)).toEqual([]);
    const { rows } = await t.sql.query("select details from activity_log where action = 'agent.resumed' and entity_id = $1", [agent.id]);
    expect(rows.map((row: any) => row.details)).toEqual([{ from: 'paused', to: 'idle', liftedHolds: [{ holder: 'plugin:costs', reason: 'budget_hard_stop' }] }]);
  });

  it("pauses a company with the board's hold; a status set over the pause lifts every hold", async () => {
    const company = await createCompany(t.api);
    const paused = await t.api.patch(`/api/companies/${company.id}`, { status: 'paused' });
    expect([paused.status, paused.body.status]).toEqual([200, 'paused']);
    expect(await holds(company.id)).toEqual([{ holder: 'operator', reason: 'manual' }]);
    await t.sql.query(`select keel_private.change_hold($1, 'company', $1, 'plugin:costs', 'budget_hard_stop', true)`, [company.id]);

    const active = await t.api.patch(`/api/companies/${company.id}`, { status: 'active' });
    expect([active.status, active.body.status]).toEqual([200, 'active']);
    expect(await holds(company.id)).toEqual([]);
    const { rows } = await t.sql.query(
      "select details from activity_log where action = 'company.updated' and entity_id = $1 order by seq desc limit 1", [company.id]);
    expect(rows[0].details.liftedHolds).toEqual([{ holder: 'plugin:costs', reason: 'budget_hard_stop' }]);
    const { rows: events } = await t.sql.query(
      "select payload from keel_events.outbox where name = 'company.status_changed' and entity_id = $1 order by seq", [company.id]);
    expect(events.map((e: any) => [e.payload.from, e.payload.to, e.payload.reason])).toEqual([['active', 'paused', 'manual'], ['paused', 'active', null]]);
  });

  it('archiving a paused company lifts its holds and holds its agents for the archive', async () => {
    const company = await createCompany(t.api);
    const agent = await createAgent(t.api, company.id);
    expect((await t.api.patch(`/api/companies/${company.id}`, { status: 'paused' })).status).toBe(200);
    const archived = await t.api.post(`/api/companies/${company.id}/archive`);
    expect([archived.status, archived.body.status]).toEqual([200, 'archived']);
    expect(await holds(company.id)).toEqual([]);
    expect(await holds(agent.id)).toEqual([{ holder: 'kernel', reason: 'company_archived' }]);
    const { rows } = await t.sql.query('select status, pause_reason, paused_at from companies where id = $1', [company.id]);
    expect(rows[0]).toEqual({ status: 'archived', pause_reason: null, paused_at: null });
  });
});
