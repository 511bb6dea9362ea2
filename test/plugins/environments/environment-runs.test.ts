import { existsSync } from 'node:fs';
import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsSettled } from '../../support/events.ts';
import type { Api, TestKernel } from '../../support/harness.ts';
import { agentScripts, processAgent, runWhen, waitFor, wakeOk } from '../runtime/helpers.ts';
import { createEnvironment, startEnvironmentsWorld, UNKNOWN_ID } from './helpers.ts';

/**
 * Runs of process agents whose configuration names an environment: the runtime leases a
 * directory of it for each run, the kernel runs the agent there with the environment's
 * variables (a secret reference resolved by the vault), and the lease is released, its
 * directory removed, however the run ends. Real agent processes, real kernel, real database.
 */
let world: Awaited<ReturnType<typeof startEnvironmentsWorld>>;
let t: TestKernel;
let company: any;
let other: any;
let mountA: string;
let mountB: string;
let managerApi: Api;
let scripts: string;

const PROBE = `const fs = require('node:fs'); fs.writeFileSync('proof.txt', 'written by the agent');
  console.log(JSON.stringify({ type: 'service.result', result: { cwd: process.cwd(), region: process.env.REGION ?? null, token: process.env.DEPLOY_TOKEN ?? null,
    shared: process.env.SHARED ?? null, path: process.env.PATH, uid: process.getuid(), proof: fs.readFileSync('proof.txt', 'utf8'), instructions: fs.existsSync('.keel/instructions/AGENTS.md') } }));`;

beforeAll(async () => {
  world = await startEnvironmentsWorld();
  ({ t, company, other, mountA, mountB, managerApi } = world);
  scripts = await agentScripts();
  await writeFile(join(scripts, 'probe.cjs'), PROBE, { mode: 0o644 });
});
afterAll(async () => { await world?.stop(); });

async function secret(companyId: string, name: string, value: string): Promise<string> {
  const res = await t.api.post(`/api/companies/${companyId}/secrets`, { name, value });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function environment(root: string, extra: Record<string, unknown> = {}, companyId = company.id) {
  await mkdir(root, { recursive: true, mode: 0o755 });
  return createEnvironment(t.api, companyId, { name: `Env ${root.split('/').pop()}`, driver: 'local', config: { root }, ...extra });
}

async function leaseOf(environmentId: string, runId: string): Promise<any> {
  return waitFor(async () => (await t.api.get(`/api/environments/${environmentId}/leases`)).body.find((lease: any) => lease.runId === runId), `the lease of run ${runId}`);
}

async function released(leaseId: string): Promise<any> {
  return waitFor(async () => {
    const lease = (await t.api.get(`/api/environment-leases/${leaseId}`)).body;
    return lease.status === 'released' ? lease : undefined;
  }, `lease ${leaseId} released`);
}

describe('a run in an environment', () => {
  it('runs the agent in its lease directory with the environment\'s variables (plain and from a secret); the agent\'s own win; the lease is released and its directory removed when it succeeds', async () => {
    const secretId = await secret(company.id, 'DEPLOY', 'the-deploy-token');
    const env = await environment(join(mountA, 'runs'), {
      envVars: { REGION: 'eu-west', SHARED: 'from the environment', DEPLOY_TOKEN: { type: 'secret_ref', secretId } },
    });
    const agent = await processAgent(t.api, company.id, join(scripts, 'probe.cjs'), { environmentId: env.id, env: { SHARED: 'from the agent' } });
    const wake = await wakeOk(t.api, agent.id);
    const run = await runWhen(t, wake.run.id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    const lease = await leaseOf(env.id, run.id);
    expect(lease).toMatchObject({ policy: 'ephemeral', environmentId: env.id, runId: run.id, path: `${mountA}/runs/leases/${lease.id}` });
    // The secret reached the process: what it printed of it is exactly the vault's value, masked in its result.
    expect(run.resultJson).toMatchObject({
      cwd: await realpath(mountA).then((real) => `${real}/runs/leases/${lease.id}`), region: 'eu-west', token: '***', shared: 'from the agent',
      path: '/usr/local/bin:/usr/bin:/bin', proof: 'written by the agent',
    });
    if (process.getuid?.() === 0) expect(run.resultJson.uid).not.toBe(0);
    const ended = await released(lease.id);
    expect(ended.releaseReason).toBe('run_closed');
    expect(existsSync(lease.path)).toBe(false);
    // Which secret went into the run is audited (name, id, version), never its value.
    const audit = (await t.sql.query(`select details from security_audit_log where run_id = $1 and event = 'secret.environment_resolved'`, [run.id])).rows;
    expect(audit.map((row: any) => row.details.environmentId)).toContain(env.id);
    const entry = audit.find((row: any) => row.details.environmentId === env.id)!.details;
    expect(entry.secrets).toEqual([{ envName: 'DEPLOY_TOKEN', secretId, version: 1, source: 'environment' }]);
    expect(JSON.stringify(audit)).not.toContain('the-deploy-token');
    const activity = await t.api.get(`/api/companies/${company.id}/activity?entityType=environment&entityId=${env.id}`);
    expect(JSON.stringify(activity.body)).not.toContain('the-deploy-token');
  });

  it('releases the lease and removes its directory when the run fails, and when it is cancelled', async () => {
    const env = await environment(join(mountA, 'ends'));
    const failing = await processAgent(t.api, company.id, join(scripts, 'fail.cjs'), { environmentId: env.id });
    const failed = await runWhen(t, (await wakeOk(t.api, failing.id)).run.id);
    expect(failed.status).toBe('failed');
    const failedLease = await released((await leaseOf(env.id, failed.id)).id);
    expect(existsSync(failedLease.path)).toBe(false);

    const hanging = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), { environmentId: env.id });
    const wake = await wakeOk(t.api, hanging.id);
    await runWhen(t, wake.run.id, (run) => run.status === 'running');
    const lease = await leaseOf(env.id, wake.run.id);
    expect(lease.status).toBe('active');
    expect(existsSync(lease.path)).toBe(true);
    const cancel = await t.api.post(`/api/heartbeat-runs/${wake.run.id}/cancel`);
    expect(cancel.status, cancel.text).toBe(200);
    expect((await runWhen(t, wake.run.id)).status).toBe('cancelled');
    const cancelledLease = await released(lease.id);
    expect(existsSync(cancelledLease.path)).toBe(false);
  });

  it('with a limit of 1, one of two runs woken at once gets the lease; the other waits queued and starts once the lease is back', async () => {
    const env = await environment(join(mountA, 'single'), { maxConcurrentLeases: 1 });
    const first = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), { environmentId: env.id });
    const second = await processAgent(t.api, company.id, join(scripts, 'hang.cjs'), { environmentId: env.id });
    const wakes = await Promise.all([wakeOk(t.api, first.id), wakeOk(t.api, second.id)]);
    const runs = () => Promise.all(wakes.map(async (wake) => (await t.api.get(`/api/heartbeat-runs/${wake.run.id}`)).body));
    // One runs; the other was tried (its row touched) and stays queued.
    const [running, waiting] = await waitFor(async () => {
      const now = await runs();
      const on = now.find((run) => run.status === 'running');
      const off = now.find((run) => run.status === 'queued' && run.updatedAt !== run.createdAt);
      return on && off ? [on, off] : undefined;
    }, 'one run running and one waiting');
    const active = (await t.api.get(`/api/environments/${env.id}/leases?status=active`)).body;
    expect(active.map((lease: any) => lease.runId)).toEqual([running.id]);
    expect(waiting.executionId).toBeNull();
    // The first ends: the waiting run gets the lease on its next try and runs.
    expect((await t.api.post(`/api/heartbeat-runs/${running.id}/cancel`)).status).toBe(200);
    await runWhen(t, waiting.id, (run) => run.status === 'running');
    const next = await leaseOf(env.id, waiting.id);
    expect(next.status).toBe('active');
    expect((await t.api.post(`/api/heartbeat-runs/${waiting.id}/cancel`)).status).toBe(200);
    await released(next.id);
    expect((await t.api.get(`/api/environments/${env.id}/leases?status=active`)).body).toEqual([]);
  });
});

describe('refusals', () => {
  it('fails the run with environment_not_found for another company\'s environment and for an unknown one, and leases nothing', async () => {
    const foreign = await environment(join(mountB, 'theirs'), {}, other.id);
    for (const environmentId of [foreign.id, UNKNOWN_ID]) {
      const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), { environmentId });
      const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
      expect(run).toMatchObject({ status: 'failed', errorCode: 'environment_not_found', executionId: null });
    }
    expect((await t.api.get(`/api/environments/${foreign.id}/leases`)).body).toEqual([]);
  });

  it('refuses variables that could change what the command runs when an environment is written (422), and at start when one is stored anyway', async () => {
    for (const name of ['LD_PRELOAD', 'PATH', 'NODE_OPTIONS', 'BASH_ENV', 'SERVICE_API_KEY', 'path']) {
      const res = await managerApi.post(`/api/companies/${company.id}/environments`, { name: 'Bad', driver: 'local', config: { root: join(mountA, 'bad') }, envVars: { [name]: 'x' } });
      expect(res.status, name).toBe(422);
      expect(res.body).toMatchObject({ code: 'environment_variable_refused', details: { fields: [name] } });
    }
    const env = await environment(join(mountA, 'preload'), { envVars: { REGION: 'eu' } });
    const patched = await managerApi.patch(`/api/environments/${env.id}`, { envVars: { LD_PRELOAD: '/tmp/evil.so' } });
    expect(patched.status).toBe(422);
    expect((await t.api.get(`/api/environments/${env.id}`)).body.envVars).toEqual({ REGION: 'eu' });
    // A row written around the plugin's check (as an older version could have): the kernel refuses it at start.
    await t.sql.query(`update plugin_environments.environments set env_vars = '{"LD_PRELOAD": "/tmp/evil.so"}'::jsonb where id = $1`, [env.id]);
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), { environmentId: env.id });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'environment_variable_refused', executionId: null });
    await released((await leaseOf(env.id, run.id)).id);
  });

  it('fails the run when the environment\'s root leads outside the company\'s mount (a link), and leases nothing', async () => {
    const outside = join(world.base, 'outside-root');
    await mkdir(outside, { mode: 0o755 });
    await symlink(outside, join(mountA, 'escape'));
    const env = await createEnvironment(t.api, company.id, { name: 'Escape', driver: 'local', config: { root: join(mountA, 'escape') } });
    const agent = await processAgent(t.api, company.id, join(scripts, 'quick.cjs'), { environmentId: env.id });
    const run = await runWhen(t, (await wakeOk(t.api, agent.id)).run.id);
    expect(run).toMatchObject({ status: 'failed', errorCode: 'lease_directory_unavailable', executionId: null });
    expect(existsSync(join(outside, 'leases'))).toBe(false);
    expect((await t.api.get(`/api/environments/${env.id}/leases`)).body).toEqual([]);
    await eventsSettled(t);
  });
});
