import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contributionsOf } from '../../../kernel/host/contributions/contribution-points.ts';
import type { TestKernel } from '../../support/harness.ts';
import { processAgent, runWhen, startRuntimeWorld, waitFor } from './helpers.ts';

/**
 * A ledger run opened by a plugin's call is confirmed inside that call's transaction, just
 * before its COMMIT; a run left unconfirmed past its call's signed lifetime (its Keel process
 * died between the kernel's commit of the open and the plugin's) is closed by the sweep of any
 * process. The dead process is acted out by the row it would leave: a live run, opened by a
 * call, never confirmed, due.
 */
let t: TestKernel;
let company: any;
let scripts: string;

beforeAll(async () => {
  ({ t, company, scripts } = await startRuntimeWorld('Unconfirmed Co'));
});
afterAll(async () => { await t?.stop(); });

const sweep = () => contributionsOf(t.kernel.host).unconfirmedRuns.sweep();
const ledgerRun = async (runId: string) => (await t.sql.query('select status, close_reason, opened_by_call, confirm_by from runs where id = $1', [runId])).rows[0];

/** The row a process that died between the two commits leaves behind. */
async function orphanedRun(agentId: string, confirmBy: string): Promise<string> {
  const { rows } = await t.sql.query(
    `insert into runs (company_id, agent_id, status, opened_by_plugin, opened_by_call, confirm_by, token_expires_at)
     values ($1, $2, 'running', 'runtime', gen_random_uuid(), now() + $3::interval, now() + interval '1 hour') returning id`, [company.id, agentId, confirmBy]);
  return rows[0].id;
}

describe('runs whose opening call never committed', () => {
  it('are closed failed opening_call_failed by the sweep once due, with an activity entry; not before', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'));
    const due = await orphanedRun(agent.id, '-1 second');
    const notYet = await orphanedRun(agent.id, '10 minutes');
    const closed = await sweep();
    expect(closed).toContain(due);
    expect(closed).not.toContain(notYet);
    expect(await ledgerRun(due)).toMatchObject({ status: 'failed', close_reason: 'opening_call_failed', confirm_by: null });
    expect(await ledgerRun(notYet)).toMatchObject({ status: 'running' });
    const { rows: activity } = await t.sql.query(`select action, actor_id, details from activity_log where entity_id = $1 and action = 'run.closed'`, [due]);
    expect(activity).toEqual([{ action: 'run.closed', actor_id: 'plugin:runtime', details: { status: 'failed', reason: 'opening_call_failed', plugin: 'runtime' } }]);
    expect(await sweep()).not.toContain(due);
    await t.sql.query(`update runs set status = 'cancelled', finished_at = now(), confirm_by = null where id = $1`, [notYet]);
  });

  it('a run whose opening call committed is confirmed and never closed by the sweep', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'));
    const woken = await t.api.post(`/api/agents/${agent.id}/wakeup`, {});
    expect(woken.status, woken.text).toBe(202);
    const runId = woken.body.run.id;
    const confirmed = await ledgerRun(runId);
    expect(confirmed.opened_by_call).toEqual(expect.any(String));
    expect(confirmed.confirm_by).toBeNull();
    await runWhen(t, runId, (run) => run.status === 'running');
    // Even were it due, a confirmed run is not the sweep's.
    expect(await sweep()).not.toContain(runId);
    expect((await ledgerRun(runId)).status).toBe('running');
    expect((await t.api.post(`/api/heartbeat-runs/${runId}/cancel`)).status).toBe(200);
    await runWhen(t, runId);
  });

  it('a run whose opening call is still in flight is unconfirmed but not yet due, and confirmed by its commit', async () => {
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'));
    // The runtime's insert of its run row waits, holding its transaction open after the ledger run committed.
    const name = `slow_${agent.id.replaceAll('-', '')}`;
    await t.sql.query(`create function public.${name}() returns trigger language plpgsql security definer set search_path = public as $$
      begin perform pg_sleep(1.5); return new; end $$`);
    await t.sql.query(`create trigger ${name} before insert on plugin_runtime.runs for each row when (new.agent_id = '${agent.id}') execute function public.${name}()`);
    const waking = t.api.post(`/api/agents/${agent.id}/wakeup`, {});
    const inFlight = await waitFor(async () => {
      const { rows } = await t.sql.query('select id, confirm_by from runs where agent_id = $1', [agent.id]);
      return rows[0];
    }, 'the ledger run to be opened');
    expect(inFlight.confirm_by).not.toBeNull();
    expect(new Date(inFlight.confirm_by).getTime()).toBeGreaterThan(Date.now() + 30_000);
    expect(await sweep()).not.toContain(inFlight.id);
    const woken = await waking;
    expect(woken.status, woken.text).toBe(202);
    expect((await ledgerRun(inFlight.id)).confirm_by).toBeNull();
    await runWhen(t, woken.body.run.id);
  });

  it('the confirmation cannot be called without the kernel\'s signature', async () => {
    const role = t.kernel.host.databases.roles({ key: 'runtime', database: { namespace: 'runtime' } }).runtime;
    const client = await t.sql.connect();
    try {
      await client.query(`set role ${role}`);
      await expect(client.query(`select keel_bridge.confirm_opened_runs($1, 'forged')`, [JSON.stringify({ plugin: 'runtime', role, invocationId: '00000000-0000-0000-0000-000000000000', exp: 9999999999 })]))
        .rejects.toThrow(/invalid invocation signature/);
    } finally {
      await client.query('reset role').catch(() => undefined);
      client.release();
    }
  });
});
