import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../kernel/config/load.ts';
import { startKernel, type RunningKernel } from '../../kernel/kernel.ts';
import { createLogger } from '../../kernel/logger.ts';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { createApi, startTestKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/job-fx', import.meta.url));
const KEY = 'job-fx';
// Both kernels of the shared-database test derive the plugin role passwords from one secret.
const SECRET = 'jobs-test-shared-instance-secret-0123456789';
let t: TestKernel;
let agentToken: string;

async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs: number, what: string): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function finishedRun(jobKey: string, runId: string): Promise<any> {
  return waitFor(async () => {
    const res = await t.api.get(`/api/plugins/${KEY}/jobs/${jobKey}/runs`);
    const run = res.body.find((r: any) => r.id === runId);
    return run && run.status !== 'running' ? run : undefined;
  }, 15_000, `run ${runId} of ${jobKey}`);
}

async function schedules(): Promise<Array<{ key: string; cron: string; timezone: string }>> {
  return (await t.sql.query("select key, cron, timezone from keel_jobs.schedule where name = $1 order by key", [`plugin/${KEY}`])).rows;
}

beforeAll(async () => {
  t = await startTestKernel({ auth: { agentJwtSecret: SECRET } });
  await installAndEnable(t, FIXTURE);
  const company = await createCompany(t.api);
  const agent = await createAgent(t.api, company.id);
  agentToken = await createAgentKey(t.api, agent.id);
});
afterAll(async () => { await t?.stop(); });

describe('job listing and schedules', () => {
  it('lists jobs with their schedule, next run and last run', async () => {
    const res = await t.api.get(`/api/plugins/${KEY}/jobs`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.map((j: any) => j.key)).toEqual(['tick', 'manual', 'boom', 'slow', 'nightly', 'idle']);
    const tick = res.body.find((j: any) => j.key === 'tick');
    expect(tick).toMatchObject({ pluginKey: KEY, schedule: '* * * * *', scheduled: true, description: 'Records a tick every minute' });
    const next = new Date(tick.nextRunAt).getTime();
    expect(next).toBeGreaterThan(Date.now() - 1000);
    expect(next).toBeLessThanOrEqual(Date.now() + 61_000);
    expect(new Date(tick.nextRunAt).getUTCSeconds()).toBe(0);
    const nightly = res.body.find((j: any) => j.key === 'nightly');
    expect(new Date(nightly.nextRunAt).toISOString()).toMatch(/T02:30:00\.000Z$/);
    const manual = res.body.find((j: any) => j.key === 'manual');
    expect(manual).toMatchObject({ schedule: null, scheduled: false, nextRunAt: null });
  });

  it('registers the schedules with the job engine in the database, in UTC', async () => {
    expect(await schedules()).toEqual([
      { key: 'nightly', cron: '30 2 * * *', timezone: 'UTC' },
      { key: 'tick', cron: '* * * * *', timezone: 'UTC' },
    ]);
  });

  it('is for instance admins only', async () => {
    for (const path of [`/api/plugins/${KEY}/jobs`, `/api/plugins/${KEY}/jobs/manual/runs`, `/api/plugins/${KEY}/dashboard`]) {
      const res = await t.api.get(path, { token: agentToken });
      expect(res.status, path).toBe(403);
    }
    const trigger = await t.api.post(`/api/plugins/${KEY}/jobs/manual/trigger`, {}, { token: agentToken });
    expect(trigger.status).toBe(403);
    expect((await t.sql.query("select count(*)::int as n from plugin_job_runs where job_key = 'manual'")).rows[0].n).toBe(0);
  });

  it('answers 404 for unknown plugins and jobs', async () => {
    expect((await t.api.get('/api/plugins/no-such-plugin/jobs')).status).toBe(404);
    const runs = await t.api.get(`/api/plugins/${KEY}/jobs/nope/runs`);
    expect(runs.status).toBe(404);
    expect(runs.body).toEqual({ error: `Plugin ${KEY} has no job nope`, code: 'job_not_found' });
    const trigger = await t.api.post(`/api/plugins/${KEY}/jobs/nope/trigger`, {});
    expect(trigger.status).toBe(404);
    expect(trigger.body.code).toBe('job_not_found');
  });

  it('keeps the engine schema and the host tables out of reach of plugin roles', async () => {
    for (const sql of ['select count(*) from keel_jobs.job', 'select count(*) from keel_jobs.schedule', 'select count(*) from keel_host.webhook_deliveries']) {
      const res = await t.api.post(`/api/plugins/${KEY}/sql`, { sql });
      expect([res.status, res.body.code], `${sql}: ${res.text}`).toEqual([403, 'sql_42501']);
    }
    const logs = (await t.api.get(`/api/plugins/${KEY}/logs`)).body.logs as Array<{ message: string }>;
    expect(logs.filter((line) => /permission denied for schema (keel_jobs|keel_host)/.test(line.message))).toHaveLength(3);
  });
});

describe('manual runs', () => {
  it('triggers a job: 202 with the run record, then the run succeeds and is recorded', async () => {
    const res = await t.api.post(`/api/plugins/${KEY}/jobs/manual/trigger`, {});
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ pluginKey: KEY, jobKey: 'manual', trigger: 'manual', status: 'running', error: null, finishedAt: null });
    const run = await finishedRun('manual', res.body.id);
    expect(run).toMatchObject({ status: 'succeeded', error: null });
    expect(run.durationMs).toBeGreaterThanOrEqual(0);
    const ticks = (await t.sql.query("select invocation from plugin_jobfx.ticks where job = 'manual'")).rows;
    expect(ticks).toHaveLength(1);
    expect(ticks[0].invocation).toMatchObject({ kind: 'job', target: 'manual', companyId: null, actor: { type: 'system', id: 'scheduler', agentId: null }, runId: null });
    const activity = (await t.sql.query(
      "select action, actor_type, actor_id, entity_type, entity_id, company_id, details from activity_log where action in ('plugin.job_triggered', 'plugin.job-fx.job.manual') order by seq")).rows;
    expect(activity).toEqual([
      { action: 'plugin.job_triggered', actor_type: 'user', actor_id: 'local-board', entity_type: 'plugin_job', entity_id: 'job-fx.manual', company_id: null, details: { plugin: KEY, job: 'manual', runId: run.id } },
      { action: 'plugin.job-fx.job.manual', actor_type: 'system', actor_id: 'scheduler', entity_type: 'plugin_job_run', entity_id: run.id, company_id: null, details: { plugin: KEY } },
    ]);
  });

  it('writes no activity for a job that changed nothing: its run record is the trace', async () => {
    const res = await t.api.post(`/api/plugins/${KEY}/jobs/idle/trigger`, {});
    expect(res.status, res.text).toBe(202);
    const run = await finishedRun('idle', res.body.id);
    expect(run.status).toBe('succeeded');
    const activity = (await t.sql.query("select action, entity_id from activity_log where action in ('plugin.job_triggered', 'plugin.job-fx.job.idle') and (entity_id = $1 or details->>'runId' = $1) order by seq", [run.id])).rows;
    expect(activity).toEqual([{ action: 'plugin.job_triggered', entity_id: 'job-fx.idle' }]);
  });

  it('records a failing job as failed with its error, rolls back its writes and logs it', async () => {
    const res = await t.api.post(`/api/plugins/${KEY}/jobs/boom/trigger`, {});
    expect(res.status).toBe(202);
    const run = await finishedRun('boom', res.body.id);
    expect(run.status).toBe('failed');
    expect(run.error).toBe('deliberate_failure: the boom job always fails');
    expect((await t.sql.query("select count(*)::int as n from plugin_jobfx.ticks where job = 'boom'")).rows[0].n).toBe(0);
    const logs = await t.api.get(`/api/plugins/${KEY}/logs`);
    expect(logs.body.logs.some((l: any) => l.level === 'error' && l.message.includes('job boom failed: deliberate_failure'))).toBe(true);
  });

  it('refuses a second run of a job that is still running', async () => {
    const first = await t.api.post(`/api/plugins/${KEY}/jobs/slow/trigger`, {});
    expect(first.status).toBe(202);
    const second = await t.api.post(`/api/plugins/${KEY}/jobs/slow/trigger`, {});
    expect(second.status).toBe(409);
    expect(second.body).toEqual({ error: `Job slow of ${KEY} is already running`, code: 'job_already_running' });
    const run = await finishedRun('slow', first.body.id);
    expect(run.status).toBe('succeeded');
    expect((await t.sql.query("select count(*)::int as n from plugin_job_runs where job_key = 'slow'")).rows[0].n).toBe(1);
    const third = await t.api.post(`/api/plugins/${KEY}/jobs/slow/trigger`, {});
    expect(third.status).toBe(202);
    await finishedRun('slow', third.body.id);
  });

  it('lists runs newest first with a bounded limit, and shows the last run on the job', async () => {
    const second = await t.api.post(`/api/plugins/${KEY}/jobs/manual/trigger`, {});
    await finishedRun('manual', second.body.id);
    const all = await t.api.get(`/api/plugins/${KEY}/jobs/manual/runs`);
    expect(all.body).toHaveLength(2);
    expect(all.body[0].id).toBe(second.body.id);
    expect(new Date(all.body[0].startedAt).getTime()).toBeGreaterThanOrEqual(new Date(all.body[1].startedAt).getTime());
    const one = await t.api.get(`/api/plugins/${KEY}/jobs/manual/runs?limit=1`);
    expect(one.body.map((r: any) => r.id)).toEqual([second.body.id]);
    for (const bad of ['0', '101', 'x']) {
      const res = await t.api.get(`/api/plugins/${KEY}/jobs/manual/runs?limit=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.code).toBe('validation_failed');
    }
    const jobs = await t.api.get(`/api/plugins/${KEY}/jobs`);
    expect(jobs.body.find((j: any) => j.key === 'manual').lastRun).toMatchObject({ id: second.body.id, status: 'succeeded' });
  });

  it('summarises the plugin on its dashboard', async () => {
    const res = await t.api.get(`/api/plugins/${KEY}/dashboard`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.plugin).toMatchObject({ id: KEY, pluginKey: KEY, displayName: 'Job fixture', version: '1.0.0', status: 'enabled' });
    expect(res.body.health).toMatchObject({ status: 'enabled', healthy: true, worker: { status: 'running' }, lastError: null });
    expect(res.body.counts).toEqual({ routes: 1, tools: 0, jobs: 6, webhooks: 0, events: 0 });
    expect(res.body.recentJobRuns.length).toBeGreaterThanOrEqual(4);
    expect(res.body.recentJobRuns[0]).toMatchObject({ pluginKey: KEY });
    expect(res.body.recentLogs.some((l: any) => l.message.includes('job boom failed'))).toBe(true);
    expect((await t.api.get('/api/plugins/no-such-plugin/dashboard')).status).toBe(404);
  });
});

describe('lifecycle', () => {
  it('removes schedules on disable, refuses triggers while disabled, and registers them again on enable', async () => {
    const disabled = await t.api.post(`/api/plugins/${KEY}/disable`, {});
    expect(disabled.status, disabled.text).toBe(200);
    expect(await schedules()).toEqual([]);
    const jobs = await t.api.get(`/api/plugins/${KEY}/jobs`);
    expect(jobs.body.find((j: any) => j.key === 'tick')).toMatchObject({ scheduled: false, nextRunAt: null });
    const trigger = await t.api.post(`/api/plugins/${KEY}/jobs/manual/trigger`, {});
    expect(trigger.status).toBe(409);
    expect(trigger.body).toEqual({ error: `Plugin ${KEY} is not enabled`, code: 'plugin_not_enabled' });
    const enabled = await t.api.post(`/api/plugins/${KEY}/enable`, {});
    expect(enabled.status, enabled.text).toBe(200);
    expect((await schedules()).map((s) => s.key)).toEqual(['nightly', 'tick']);
  });

  it('refuses schedules that are not 5-field cron expressions', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-bad-cron-'));
    try {
      const write = async (key: string, schedule: string) => {
        const folder = join(dir, key);
        await mkdir(join(folder, 'src'), { recursive: true });
        await writeFile(join(folder, 'plugin.json'), JSON.stringify({
          key, version: '1.0.0', sdkApiVersion: 1, displayName: key, entry: 'src/index.ts',
          capabilities: [{ id: 'jobs.schedule', reason: 'Runs a job' }], jobs: [{ key: 'x', schedule }],
        }));
        await writeFile(join(folder, 'src/index.ts'), "import { definePlugin } from '@keel/sdk/plugin';\nexport default definePlugin({ jobs: { x: () => null } });\n");
        return folder;
      };
      const sixFields = await t.api.post('/api/plugins/install', { localPath: await write('job-fx-six', '*/5 * * * * *') });
      expect(sixFields.status).toBe(422);
      expect(sixFields.body.code).toBe('invalid_manifest');
      expect(sixFields.body.issues[0].path).toBe('jobs.0.schedule');
      const installed = await t.api.post('/api/plugins/install', { localPath: await write('job-fx-bad', '61 * * * *') });
      expect(installed.status, installed.text).toBe(201);
      const enabled = await t.api.post('/api/plugins/job-fx-bad/enable', {});
      expect(enabled.status).toBe(422);
      expect(enabled.body.code).toBe('invalid_job_schedule');
      expect(enabled.body.error).toContain('job x has an invalid schedule "61 * * * *"');
      expect((await t.sql.query("select count(*)::int as n from keel_jobs.schedule where name = 'plugin/job-fx-bad'")).rows[0].n).toBe(0);
      expect((await t.api.get('/api/plugins/job-fx-bad')).body.status).toBe('failed');
    } finally {
      await t.api.delete('/api/plugins/job-fx-bad');
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('scheduled runs', () => {
  let second: RunningKernel | undefined;
  afterAll(async () => { await second?.stop(); });

  it('runs each occurrence once although two kernels share the database', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'keel-test-second-'));
    const config = loadConfig({
      env: {},
      overrides: {
        dataDir, database: { url: t.databaseUrl, poolSize: 5 }, logging: { level: 'silent' }, auth: { agentJwtSecret: SECRET },
        server: { host: '127.0.0.1', port: 0, exposure: 'private' },
      },
    });
    second = await startKernel(config, { log: createLogger('silent'), port: 0, bootstrapFirstParty: false });
    const otherApi = createApi(second.url);
    expect((await otherApi.get(`/api/plugins/${KEY}/health`)).body.healthy).toBe(true);
    const since = new Date();
    const runs = await waitFor(async () => {
      const rows = (await t.sql.query(
        "select id, status, error from plugin_job_runs where job_key = 'tick' and trigger = 'schedule' and status <> 'running' and started_at > $1 order by started_at", [since])).rows;
      return rows.length >= 2 ? rows : undefined;
    }, 150_000, 'two scheduled runs of tick');
    expect(runs.filter((r: any) => r.status !== 'succeeded'), JSON.stringify(runs)).toEqual([]);
    // Let both kernels' cron passes and workers see the latest occurrence before counting.
    await new Promise((r) => setTimeout(r, 12_000));
    // Each occurrence is filed once under its minute's slot; each filed occurrence became one job and one run.
    const slots = (await t.sql.query(
      "select count(distinct singleton_on)::int as n, count(*)::int as jobs from keel_jobs.job where name = '__pgboss__send-it' and data ->> 'name' = $1 and data ->> 'key' = 'tick'", [`plugin/${KEY}`])).rows[0];
    expect(slots.jobs).toBe(slots.n);
    const engineJobs = (await t.sql.query("select count(*)::int as n from keel_jobs.job where name = $1 and data ->> 'jobKey' = 'tick'", [`plugin/${KEY}`])).rows[0].n;
    const recorded = (await t.sql.query("select count(*)::int as n from plugin_job_runs where job_key = 'tick' and trigger = 'schedule'")).rows[0].n;
    expect(recorded).toBeGreaterThanOrEqual(2);
    expect(engineJobs).toBe(recorded);
    expect(recorded).toBeLessThanOrEqual(slots.n);
    const succeeded = (await t.sql.query("select count(*)::int as n from plugin_job_runs where job_key = 'tick' and trigger = 'schedule' and status = 'succeeded'")).rows[0].n;
    expect((await t.sql.query("select count(*)::int as n from plugin_jobfx.ticks where job = 'tick'")).rows[0].n).toBe(succeeded);
    const jobs = await t.api.get(`/api/plugins/${KEY}/jobs`);
    expect(jobs.body.find((j: any) => j.key === 'tick').lastRun).toMatchObject({ trigger: 'schedule', status: 'succeeded' });
    // Stopping one kernel leaves the schedules for the other.
    await second.stop();
    second = undefined;
    await rm(dataDir, { recursive: true, force: true });
    expect((await schedules()).map((s) => s.key)).toEqual(['nightly', 'tick']);
  }, 200_000);
});
