import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../../support/fixtures.ts';
import { startTestKernel, type TestKernel } from '../../support/harness.ts';
import { expectKernelAlive, installAndEnable } from './support.ts';

/** SANDBOX.md class 6: cross-tenant access and identity forging. */
let t: TestKernel;
let companyA: any;
let companyB: any;
let agentA: any;
let agentB: any;
let agentAKey: string;
let secretB: string;
const SECRET_VALUE = 'b-secret-value-0123456789';
const P = '/api/plugins/attack-tenant';

beforeAll(async () => {
  t = await startTestKernel();
  companyA = await createCompany(t.api);
  companyB = await createCompany(t.api);
  agentA = await createAgent(t.api, companyA.id);
  const secret = await t.api.post(`/api/companies/${companyB.id}/secrets`, { name: 'B_TOKEN', value: SECRET_VALUE });
  expect(secret.status, secret.text).toBe(201);
  secretB = secret.body.id;
  agentB = await createAgent(t.api, companyB.id, { adapterConfig: { env: { B_TOKEN: { type: 'secret_ref', secretId: secret.body.id } } } });
  agentAKey = await createAgentKey(t.api, agentA.id);
  await installAndEnable(t, 'attack-tenant');
});
afterAll(async () => { await t?.stop(); });

const forge = (companyId: string, body: Record<string, unknown>, path = 'forge') => t.api.post(`${P}/companies/${companyId}/${path}`, body);

async function agentStatus(id: string): Promise<string> {
  return (await t.sql.query('select status from agents where id = $1', [id])).rows[0].status;
}

describe('a call serving company A', () => {
  it('reads and acts on company A (the control)', async () => {
    const company = await forge(companyA.id, { op: 'companies.get', target: companyA.id });
    expect(company.body.result.value).toMatchObject({ id: companyA.id });
    const agent = await forge(companyA.id, { op: 'agents.get', agentId: agentA.id });
    expect(agent.body.result.value).toMatchObject({ id: agentA.id, configRedacted: true });
  });

  it('cannot read company B, nor read, pause, resume, open runs for or resolve secrets of B\'s agent', async () => {
    const statusBefore = await agentStatus(agentB.id);
    const runsBefore = (await t.sql.query('select count(*)::int as n from runs where agent_id = $1', [agentB.id])).rows[0].n;
    // Another company is refused by its id; another company's agent is not found, as an unknown id is not.
    const refusals: Array<[Record<string, unknown>, unknown]> = [
      [{ op: 'companies.get', target: companyB.id }, { error: { code: 'cross_company_denied', status: 403 } }],
      [{ op: 'agents.get', agentId: agentB.id }, { value: null }],
      ...['agents.pause', 'agents.resume', 'runs.open', 'secrets.resolve'].map((op) => [{ op, agentId: agentB.id }, { error: { code: 'not_found', status: 404, message: 'Agent not found' } }] as [Record<string, unknown>, unknown]),
    ];
    for (const [body, expected] of refusals) {
      const res = await forge(companyA.id, body);
      expect(res.status, res.text).toBe(200);
      expect(res.body.result, `${body.op}: ${res.text}`).toMatchObject(expected as object);
      expect(res.text).not.toContain(SECRET_VALUE);
      expect(res.text).not.toContain(companyB.name);
    }
    expect(await agentStatus(agentB.id)).toBe(statusBefore);
    expect((await t.sql.query('select count(*)::int as n from runs where agent_id = $1', [agentB.id])).rows[0].n).toBe(runsBefore);
    expect((await t.sql.query("select count(*)::int as n from security_audit_log where agent_id = $1 and event = 'secret.environment_resolved'", [agentB.id])).rows[0].n).toBe(0);
    await expectKernelAlive(t);
  });

  it('cannot tell another company\'s agent or run from an unknown id: both answer the same, in the same time class', async () => {
    const opened = await forge(companyB.id, { op: 'runs.open', agentId: agentB.id });
    const runB = opened.body.result.value.runId as string;
    expect(runB).toBeTruthy();
    const unknown = '00000000-0000-4000-8000-000000000000';
    const ops: Array<(id: string) => Record<string, unknown>> = [
      (id) => ({ op: 'agents.get', agentId: id }), (id) => ({ op: 'agents.pause', agentId: id }), (id) => ({ op: 'agents.resume', agentId: id }),
      (id) => ({ op: 'runs.open', agentId: id }), (id) => ({ op: 'secrets.resolve', agentId: id }),
    ];
    const timings: Record<string, number[]> = { other: [], unknown: [] };
    for (const body of [...ops.map((op) => [op(agentB.id), op(unknown)]), [{ op: 'runs.close', target: runB }, { op: 'runs.close', target: unknown }]]) {
      const [ofOther, ofUnknown] = body as [Record<string, unknown>, Record<string, unknown>];
      const answers = [];
      for (const [which, request] of [['other', ofOther], ['unknown', ofUnknown]] as const) {
        const started = performance.now();
        const res = await forge(companyA.id, request);
        timings[which]!.push(performance.now() - started);
        expect(res.status, res.text).toBe(200);
        answers.push(res.body.result);
      }
      expect(answers[0], `${ofOther.op}`).toEqual(answers[1]);
    }
    // Same work either way: no answer for another company's id takes a different path (a lock, a second lookup).
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    expect(Math.abs(median(timings.other!) - median(timings.unknown!))).toBeLessThan(50);
    expect((await t.sql.query('select status from runs where id = $1', [runB])).rows[0].status).not.toBe('failed');
  });

  it('keeps the invocation\'s company whatever the request body, the isolate\'s copy of ctx.invocation or extra arguments say', async () => {
    const res = await forge(companyA.id, { op: 'companies.get', target: companyB.id, companyId: companyB.id });
    expect(res.body.invocationCompany).toBe(companyA.id);
    expect(res.body.requestCompany).toBe(companyA.id);
    expect(res.body.result.error.code).toBe('cross_company_denied');
    const query = await t.api.post(`${P}/companies/${companyA.id}/forge?companyId=${companyB.id}`, { op: 'companies.get', target: companyB.id });
    expect(query.body.invocationCompany).toBe(companyA.id);
    const mutated = await forge(companyA.id, { op: 'agents.pause', agentId: agentB.id, target: companyB.id }, 'forge-mutated');
    expect(mutated.status, mutated.text).toBe(200);
    expect(mutated.body.plain.error.code).toBe('not_found');
    // Identity passed as an extra argument is refused: companies.get takes one argument (sdk/capabilities).
    expect(mutated.body.extraArgs.error.code).toBe('invalid_arguments');
    expect(await agentStatus(agentB.id)).not.toBe('paused');
  });

  it('a route without a company parameter called with an agent key serves the agent\'s company only', async () => {
    const res = await t.api.post(`${P}/agent/whoami`, { op: 'companies.get', target: companyB.id }, { token: agentAKey });
    expect(res.status, res.text).toBe(200);
    expect(res.body.invocation).toMatchObject({ companyId: companyA.id, actor: { type: 'agent', agentId: agentA.id } });
    expect(res.body.result.error.code).toBe('cross_company_denied');
    // The company parameter is checked against the caller before the isolate runs.
    const other = await forge(companyB.id, { op: 'companies.get', target: companyB.id }).then(() => t.api.post(`${P}/companies/${companyB.id}/forge`, { op: 'companies.get', target: companyB.id }, { token: agentAKey }));
    expect(other.status).toBe(403);
  });
});

describe('ctx objects kept across invocations', () => {
  it('a ctx captured in an earlier invocation answers invocation_closed, in the same company or another', async () => {
    const captured = await forge(companyA.id, {}, 'capture');
    expect(captured.status).toBe(200);
    for (const companyId of [companyA.id, companyB.id]) {
      for (const body of [{ op: 'companies.get', target: companyA.id }, { op: 'agents.pause', agentId: agentA.id }]) {
        const res = await forge(companyId, body, 'use-captured');
        expect(res.status, res.text).toBe(200);
        expect(res.body.result.error).toMatchObject({ code: 'invocation_closed', status: 409 });
      }
    }
    expect(await agentStatus(agentA.id)).not.toBe('paused');
  });

  it('a ctx of another company\'s invocation that is still running is refused too', async () => {
    const holding = forge(companyB.id, {}, 'hold');
    await new Promise((resolve) => setTimeout(resolve, 400));
    const res = await forge(companyA.id, { op: 'agents.pause', agentId: agentB.id }, 'use-live');
    expect(res.status, res.text).toBe(200);
    expect(res.body.hadLive).toBe(true);
    expect(res.body.result.error).toMatchObject({ code: 'invocation_closed', status: 409 });
    const read = await forge(companyA.id, { op: 'secrets.resolve', agentId: agentB.id }, 'use-live');
    expect(read.body.result.error).toMatchObject({ code: 'invocation_closed' });
    expect(read.text).not.toContain(SECRET_VALUE);
    expect((await holding).status).toBe(200);
    expect(await agentStatus(agentB.id)).not.toBe('paused');
  });
});

describe('activity entries', () => {
  const written = async (entityId: string) => (await t.sql.query("select company_id from activity_log where action = 'attack.tenant_reference' and entity_id = $1", [entityId])).rows;

  it('may not name another company\'s kernel entities, and another company\'s look unknown', async () => {
    const runB = (await forge(companyB.id, { op: 'runs.open', agentId: agentB.id })).body.result.value.runId as string;
    const refused = [
      { entityType: 'company', entityId: companyB.id }, { entityType: 'agent', entityId: agentB.id }, { entityType: 'Agent ', entityId: agentB.id },
      { entityType: 'run', entityId: runB }, { entityType: 'secret', entityId: secretB }, { entityType: 'agent', entityId: 'not-a-uuid' },
      { entityType: 'plugin', entityId: 'attack-sql' }, { entityType: 'plugin_job_run', entityId: '00000000-0000-4000-8000-000000000000' },
      { entityType: 'board_api_key', entityId: '00000000-0000-4000-8000-000000000000' },
    ];
    const accepted = [
      { entityType: 'company', entityId: companyA.id }, { entityType: 'agent', entityId: agentA.id }, { entityType: 'plugin', entityId: 'attack-tenant' },
      { entityType: 'probe', entityId: 'anything-the-plugin-owns' },
    ];
    const res = await t.api.post(`${P}/companies/${companyA.id}/record`, { entries: [...refused, ...accepted] });
    expect(res.status, res.text).toBe(200);
    const outcomes = res.body as any[];
    refused.forEach((entry, index) => expect(outcomes[index].error, JSON.stringify(entry)).toMatchObject({ code: 'activity_entity_denied', status: 403 }));
    accepted.forEach((entry, index) => expect(outcomes[refused.length + index], JSON.stringify(entry)).toEqual({ value: null }));
    // Another company's agent is refused in the same words as an unknown one.
    const unknown = await t.api.post(`${P}/companies/${companyA.id}/record`, { entries: [{ entityType: 'agent', entityId: '00000000-0000-4000-8000-000000000001' }] });
    expect(unknown.body[0].error.message.replace('00000000-0000-4000-8000-000000000001', 'ID')).toBe(outcomes[1].error.message.replace(agentB.id, 'ID'));
    for (const entry of refused) expect(await written(entry.entityId), JSON.stringify(entry)).toEqual([]);
    for (const entry of accepted) expect(await written(entry.entityId), JSON.stringify(entry)).toEqual([{ company_id: companyA.id }]);
  });

  it('from a call that serves no company, may name no company\'s entities', async () => {
    const res = await t.api.post(`${P}/record`, { entries: [{ entityType: 'company', entityId: companyA.id }, { entityType: 'agent', entityId: agentA.id }, { entityType: 'probe', entityId: 'instance-probe' }] });
    expect(res.status, res.text).toBe(200);
    expect(res.body[0].error).toMatchObject({ code: 'activity_entity_denied' });
    expect(res.body[1].error).toMatchObject({ code: 'activity_entity_denied' });
    expect(res.body[2]).toEqual({ value: null });
    expect(await written('instance-probe')).toEqual([{ company_id: null }]);
  });
});

describe('scheduled jobs', () => {
  async function runJob(job: string): Promise<{ run: any; loot: any[] }> {
    const triggered = await t.api.post(`${P}/jobs/${job}/trigger`, {});
    expect(triggered.status, triggered.text).toBe(202);
    let run: any;
    for (let i = 0; i < 100 && run?.status !== 'succeeded' && run?.status !== 'failed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = (await t.api.get(`${P}/jobs/${job}/runs`)).body.find((r: any) => r.id === triggered.body.id);
    }
    return { run, loot: (await t.api.get(`${P}/loot`)).body };
  }

  it('a job without a company reaches no company\'s data: company-scoped capabilities refuse, naming perCompany', async () => {
    expect((await t.api.post(`${P}/aim`, { companyId: companyB.id, agentId: agentB.id })).status).toBe(200);
    const { run, loot } = await runJob('peek');
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(loot).toHaveLength(1);
    const [found] = loot;
    expect(found.invocationCompany).toBeNull();
    for (const what of ['company', 'agent', 'agents']) {
      expect(found[what].error, `${what}: ${JSON.stringify(found)}`).toMatchObject({ code: 'company_scope_required', status: 403 });
      expect(found[what].error.message).toContain('perCompany');
    }
    expect(JSON.stringify(loot)).not.toContain(companyB.name);
  });

  it('a perCompany job runs once per company, each invocation scoped to that company alone', async () => {
    expect((await t.api.post(`${P}/aim`, { agentId: agentB.id })).status).toBe(200);
    const { run, loot } = await runJob('census');
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    const companies = (await t.sql.query("select id from companies where status <> 'archived'")).rows.map((r) => r.id).sort();
    expect(loot.map((found) => found.invocationCompany).sort()).toEqual(companies);
    for (const found of loot) {
      expect(found.company.value.id).toBe(found.invocationCompany);
      expect(found.agents.value.every((agent: any) => agent.companyId === found.invocationCompany)).toBe(true);
      // Company B's agent is seen by company B's invocation only.
      if (found.invocationCompany === companyB.id) expect(found.agent.value).toMatchObject({ id: agentB.id });
      else expect(found.agent).toEqual({ value: null });
    }
  });
});

describe('tools', () => {
  it('take the company from the agent\'s key or a checked companyId, never from the tool input', async () => {
    const own = await t.api.post('/api/plugins/tools/execute', { tool: 'attack-tenant.lookup', input: { companyId: companyA.id } }, { token: agentAKey });
    expect(own.status, own.text).toBe(200);
    expect(own.body.result).toMatchObject({ id: companyA.id });
    const forged = await t.api.post('/api/plugins/tools/execute', { tool: 'attack-tenant.lookup', input: { companyId: companyB.id } }, { token: agentAKey });
    expect(forged.status, forged.text).toBe(403);
    expect(forged.body.code).toBe('cross_company_denied');
    const claimed = await t.api.post('/api/plugins/tools/execute', { tool: 'attack-tenant.lookup', companyId: companyB.id, input: { companyId: companyB.id } }, { token: agentAKey });
    expect(claimed.status, claimed.text).toBe(403);
    await expectKernelAlive(t);
  });
});
