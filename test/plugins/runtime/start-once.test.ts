import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestKernel } from '../../support/harness.ts';
import { processAgent, runWhen, startRuntimeWorld, waitFor } from './helpers.ts';

/**
 * What the runtime does when one of its transactions fails after a kernel call committed: the
 * execution a start-runs job started is adopted by the job's retry (one process per run), and
 * the ledger run a failed wakeup opened is closed. The faults are real: a trigger that fails a
 * statement of the plugin's transaction (as a lost connection or a deadlock would).
 */
let t: TestKernel;
let company: any;
let scripts: string;

beforeAll(async () => {
  ({ t, company, scripts } = await startRuntimeWorld('Start Once Co'));
});
afterAll(async () => { await t?.stop(); });

/** A trigger on plugin_runtime.runs that fails the first `times` matching statements of one agent (a sequence counts, outside any transaction). */
async function failRunsStatement(agentId: string, when: 'insert' | 'start', times: number): Promise<void> {
  const name = `fault_${agentId.replaceAll('-', '')}`;
  await t.sql.query(`create sequence public.${name}`);
  await t.sql.query(`create function public.${name}() returns trigger language plpgsql security definer set search_path = public as $$
    begin
      if nextval('public.${name}') <= ${times} then raise exception 'injected fault'; end if;
      return new;
    end $$`);
  const condition = when === 'insert' ? `new.agent_id = '${agentId}'` : `new.agent_id = '${agentId}' and old.status = 'queued' and new.status = 'running'`;
  await t.sql.query(`create trigger ${name} before ${when === 'insert' ? 'insert' : 'update'} on plugin_runtime.runs for each row when (${condition}) execute function public.${name}()`);
}

describe('a start-runs job whose transaction fails after the execution started', () => {
  it('is retried, and the retry adopts the execution it started instead of starting a second process', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'));
    await failRunsStatement(agent.id, 'start', 1);
    const woken = await t.api.post(`/api/agents/${agent.id}/wakeup`, {});
    expect(woken.status, woken.text).toBe(202);
    const runId = woken.body.run.id;
    const running = await runWhen(t, runId, (run) => run.status === 'running');
    const { rows: executions } = await t.sql.query('select id, status from executions where run_id = $1', [runId]);
    expect(executions).toHaveLength(1);
    expect(running.executionId).toBe(executions[0].id);
    // Two attempts of the job: the first failed after its start, the second adopted that start.
    // The run shows as running once the attempt's transaction commits; the attempt's own record is
    // closed a moment later, so wait for it to end rather than read it mid-way.
    const attempts = await waitFor(async () => {
      const { rows } = await t.sql.query(
        `select r.status from plugin_job_runs r join keel_jobs.job j on j.id = r.job_id where j.data->'payload'->>'runId' = $1::text order by r.started_at`, [runId]);
      return rows.every((row) => row.status !== 'running') ? rows : undefined;
    }, 'the start-runs attempts to end');
    expect(attempts.map((row) => row.status)).toEqual(['failed', 'succeeded']);
    const log = await t.api.get(`/api/heartbeat-runs/${runId}/log`);
    expect(log.body.content.split('\n').filter((line: string) => line.includes('"working"'))).toHaveLength(1);
    expect((await t.api.post(`/api/heartbeat-runs/${runId}/cancel`)).status).toBe(200);
    expect((await runWhen(t, runId)).status).toBe('cancelled');
    expect((await t.sql.query('select count(*)::int as n from executions where run_id = $1', [runId])).rows[0].n).toBe(1);
  });
});

describe('a wakeup whose transaction fails after its ledger run was opened', () => {
  it('closes that ledger run (its token revoked) and keeps nothing of the wakeup', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'));
    await failRunsStatement(agent.id, 'insert', 1000);
    const res = await t.api.post(`/api/agents/${agent.id}/wakeup`, {});
    // The injected fault fails the call (the plugin answers it as an error of its own); nothing is kept.
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.body.code).toEqual(expect.any(String));
    const ledger = await waitFor(async () => {
      const { rows } = await t.sql.query('select status, close_reason from runs where agent_id = $1', [agent.id]);
      return rows.length === 1 && rows[0].status !== 'queued' && rows[0].status !== 'running' ? rows : undefined;
    }, 'the ledger run to be closed');
    expect(ledger).toEqual([{ status: 'failed', close_reason: 'opening_call_failed' }]);
    expect((await t.sql.query('select count(*)::int as n from plugin_runtime.wakeups where agent_id = $1', [agent.id])).rows[0].n).toBe(0);
  });
});
