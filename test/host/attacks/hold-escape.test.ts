import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { installAndEnable } from './support.ts';

/**
 * SANDBOX.md class 5, applied to pauses: the board's holds are placed and lifted by
 * keel_private.change_hold as holder `operator`, whose lift removes every hold. A plugin's SQL
 * must reach neither that function nor the holds table: its holds go through keel_bridge, which
 * names it `plugin:<key>` from the kernel-signed identity.
 */
let t: TestKernel;
let company: any;
let agent: any;

beforeAll(async () => {
  t = await startTestKernel();
  company = await createCompany(t.api);
  agent = await createAgent(t.api, company.id);
  await installAndEnable(t, 'attack-sql');
  expect((await t.api.post(`/api/agents/${agent.id}/pause`, { reason: 'maintenance' })).status).toBe(200);
});
afterAll(async () => { await t?.stop(); });

async function sql(statement: string, params: unknown[]): Promise<{ rows?: any[]; error?: { code: string } }> {
  const res = await t.api.post('/api/plugins/attack-sql/sql-free', { sql: statement, params });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

const holds = async () => (await t.sql.query('select holder, reason from scope_holds where scope_id = $1', [agent.id])).rows;

describe("the board's holds", () => {
  it("cannot be lifted by a plugin calling the hold writer as the operator, nor by writing the holds' table", async () => {
    const attempts: Array<[string, unknown[]]> = [
      ["select keel_private.change_hold($1::uuid, 'agent', $2::uuid, 'operator', null, false)", [company.id, agent.id]],
      ["select keel_private.change_hold($1::uuid, 'agent', $2::uuid, 'operator', 'maintenance', false)", [company.id, agent.id]],
      ['delete from public.scope_holds where scope_id = $1::uuid', [agent.id]],
      ["update public.agents set status = 'idle' where id = $1::uuid", [agent.id]],
    ];
    for (const [statement, params] of attempts) {
      const out = await sql(statement, params);
      expect(out.rows, `${statement} returned rows`).toBeUndefined();
      expect(out.error?.code, statement).toBe('sql_42501');
    }
    expect(await holds()).toEqual([{ holder: 'operator', reason: 'maintenance' }]);
    expect((await t.api.get(`/api/agents/${agent.id}`)).body).toMatchObject({ status: 'paused', pauseReason: 'maintenance' });
  });
});
