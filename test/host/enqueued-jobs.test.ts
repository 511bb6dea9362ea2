import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createAgentKey, createCompany } from '../support/fixtures.ts';
import { startPeerKernel, startTestKernel, type PeerKernel, type TestKernel } from '../support/harness.ts';
import { installAndEnable } from '../support/plugins.ts';
import { waitFor } from '../support/wait-for.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/enqueue-fx', import.meta.url));
const KEY = 'enqueue-fx';
let t: TestKernel;
let companyA: string;
let companyB: string;
let agentA: string;
let agentB: string;

const enqueue = (body: Record<string, unknown>, company = companyA, api = t.api) => api.post(`/api/plugins/${KEY}/companies/${company}/enqueue`, body);
const job = async (id: string) => (await t.api.get(`/api/plugins/${KEY}/job-queue/${id}`)).body;
const settled = (id: string, states = ['succeeded', 'failed', 'cancelled']) => waitFor(async () => { const j = await job(id); return states.includes(j.state) ? j : undefined; }, `job ${id}`);
const runsOf = async (jobId: string) => (await t.sql.query('select * from plugin_enqueuefx.runs where job_id = $1 order by id', [jobId])).rows;

beforeAll(async () => {
  t = await startTestKernel();
  await installAndEnable(t, FIXTURE);
  companyA = (await createCompany(t.api)).id;
  companyB = (await createCompany(t.api)).id;
  agentA = (await createAgent(t.api, companyA)).id;
  agentB = (await createAgent(t.api, companyB)).id;
});
afterAll(async () => { await t?.stop(); });

describe('ctx.jobs.enqueue is stored with the call\'s writes', () => {
  const staged = async (id: string) => (await t.sql.query('select id from keel_host.staged_jobs where id = $1', [id])).rows.length;

  it('moves a job a committed call staged but whose process died before queueing it (the sweep), and runs it once', async () => {
    // What a process that died between the call's commit and the move leaves: a committed staged row.
    const id = '3f1c2a4e-0c1d-4b8e-9a51-7d2e6c0b9a11';
    const ticket = { id, plugin: KEY, invocationId: 'a-call-whose-process-died', data: { jobKey: 'record', companyId: companyA, payload: { n: 42 }, singletonKey: null }, runAt: null, singletonKey: `job/${id}`, retryLimit: 2, deadlineMs: 10_000 };
    await t.sql.query('insert into keel_host.staged_jobs (id, plugin, invocation_id, company_id, job) values ($1, $2, $3, $4, $5)', [id, KEY, ticket.invocationId, companyA, JSON.stringify(ticket)]);
    const done = await settled(id);
    expect(done).toMatchObject({ id, jobKey: 'record', companyId: companyA, state: 'succeeded', payload: { n: 42 } });
    expect(await staged(id)).toBe(0);
    expect(await runsOf(id)).toHaveLength(1);
  });

  it('leaves nothing staged or queued when the call rolls back', async () => {
    const res = await enqueue({ key: 'record', payload: { n: 5 }, fail: true });
    expect([res.status, res.body.code]).toEqual([409, 'deliberate_rollback']);
    const { rows } = await t.sql.query("select count(*)::int as n from keel_host.staged_jobs where job->'data'->'payload' = '{\"n\": 5}'::jsonb");
    expect(rows[0].n).toBe(0);
  });

  it('is moved to the queue before the caller hears of it: nothing is left staged', async () => {
    const res = await enqueue({ key: 'record', payload: { n: 6 } });
    expect(res.status, res.text).toBe(200);
    expect(await staged(res.body[0].jobId)).toBe(0);
    expect((await job(res.body[0].jobId)).state).toMatch(/queued|running|succeeded/);
  });

  it('refuses a job the plugin stages itself, without a ticket the kernel signed', async () => {
    const res = await t.api.post(`/api/plugins/${KEY}/companies/${companyA}/forge`, {});
    expect(res.status, res.text).toBe(403);
    expect(res.body.code).toBe('sql_42501');
    expect(await staged('00000000-0000-4000-8000-000000000001')).toBe(0);
  });

  it('refuses to enqueue from a call without a transaction of its own (a GET route)', async () => {
    const res = await t.api.get(`/api/plugins/${KEY}/companies/${companyA}/enqueue`);
    expect([res.status, res.body.code]).toEqual([403, 'jobs_need_transaction']);
  });
});

describe('ctx.jobs.enqueue', () => {
  it('runs the job later with its payload, in the company of the call that enqueued it', async () => {
    const res = await enqueue({ key: 'record', payload: { n: 7 } });
    expect(res.status, res.text).toBe(200);
    const [{ jobId, duplicate }] = res.body;
    expect(duplicate).toBe(false);
    const done = await settled(jobId);
    expect(done).toMatchObject({ id: jobId, pluginKey: KEY, jobKey: 'record', companyId: companyA, state: 'succeeded', payload: { n: 7 }, lastRun: { status: 'succeeded', attempt: 1 } });
    const [run] = await runsOf(jobId);
    expect(run).toMatchObject({ job: 'record', company_id: companyA, attempt: 1, payload: { n: 7 } });
    // The job of company A sees A's agents only, and B's agent is not found.
    expect(run.agents).toEqual({ agents: [agentA], foreign: null });
  });

  it('a job enqueued by company A never sees company B, even when its payload names B', async () => {
    const res = await enqueue({ key: 'record', payload: { n: 1, probe: agentB } });
    // The payload schema forbids unknown fields: the forged probe is refused before anything is queued.
    expect([res.status, res.body.code]).toEqual([400, 'validation_failed']);
    const fromB = await enqueue({ key: 'record', payload: { n: 2 } }, companyB);
    const done = await settled(fromB.body[0].jobId);
    expect(done.companyId).toBe(companyB);
    expect((await runsOf(done.id))[0].agents).toEqual({ agents: [agentB], foreign: null });
  });

  it('queues nothing when the enqueuing call rolls back', async () => {
    const before = (await t.sql.query("select count(*)::int as n from keel_jobs.job where name = 'plugin/enqueue-fx/enqueued'")).rows[0].n;
    const res = await enqueue({ key: 'record', payload: { n: 3 }, fail: true });
    expect([res.status, res.body.code]).toEqual([409, 'deliberate_rollback']);
    expect((await t.sql.query("select count(*)::int as n from keel_jobs.job where name = 'plugin/enqueue-fx/enqueued'")).rows[0].n).toBe(before);
  });

  it('keeps one queued job per singletonKey in a company, and keys of two companies apart', async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const first = await enqueue({ key: 'record', payload: { n: 4 }, options: { singletonKey: 'import-1', runAt: later } });
    const again = await enqueue({ key: 'record', payload: { n: 5 }, options: { singletonKey: 'import-1', runAt: later } });
    expect(again.body[0]).toEqual({ jobId: first.body[0].jobId, duplicate: true });
    const other = await enqueue({ key: 'record', payload: { n: 6 }, options: { singletonKey: 'import-1', runAt: later } }, companyB);
    expect(other.body[0].duplicate).toBe(false);
    expect(await job(first.body[0].jobId)).toMatchObject({ state: 'queued', runAt: later, singletonKey: 'import-1' });
  });

  it('retries a failed run with backoff, and the next attempt succeeds', async () => {
    const res = await enqueue({ key: 'flaky', payload: { n: 1 } });
    const done = await settled(res.body[0].jobId, ['succeeded', 'failed']);
    expect(done).toMatchObject({ state: 'succeeded', retries: 1, lastRun: { status: 'succeeded', attempt: 2 } });
    const runs = (await t.api.get(`/api/plugins/${KEY}/jobs/flaky/runs`)).body.filter((r: any) => r.jobId === done.id);
    expect(runs.map((r: any) => [r.attempt, r.status, r.trigger])).toEqual([[2, 'succeeded', 'enqueued'], [1, 'failed', 'enqueued']]);
    expect(runs[1].error).toBe('flaky_failure: the first attempt always fails');
  });
});

/** The worker's restart count now; after a call that ends the worker, wait with workerBack(count) (-1: only for it to run). */
const restarts = async () => (await t.api.get(`/api/plugins/${KEY}/health`)).body.worker.restarts as number;
/** A timed-out call ends the worker: the next test needs its successor running. */
const workerBack = (before: number) => waitFor(async () => {
  const worker = (await t.api.get(`/api/plugins/${KEY}/health`)).body.worker;
  return worker.restarts > before && worker.status === 'running' ? worker : undefined;
}, 'the restarted worker');

describe('long calls', () => {
  it('a job with its own deadline outlives the plugin call deadline and reports progress on its run', async () => {
    const res = await enqueue({ key: 'long', payload: null });
    const id = res.body[0].jobId;
    const progressed = await waitFor(async () => { const j = await job(id); return j.progress ? j : undefined; }, 'progress');
    expect(progressed.progress).toMatchObject({ total: 3, message: expect.stringMatching(/^step \d of 3$/) });
    const done = await settled(id);
    expect(done).toMatchObject({ state: 'succeeded', progress: { done: 3, total: 3, message: 'step 3 of 3' } });
  });

  it('a route with its own timeoutMs keeps its connection past the plugin default; one without it times out', async () => {
    const slow = await t.api.post(`/api/plugins/${KEY}/slow`, {});
    expect(slow.status, slow.text).toBe(200);
    expect(slow.body).toEqual({ slept: true });
    const before = await restarts();
    const plain = await t.api.post(`/api/plugins/${KEY}/slow-default`, {});
    expect([plain.status, plain.body.code]).toEqual([504, 'plugin_timeout']);
    await workerBack(before);
  });

  it('the isolate CPU limit still holds for a job with a long deadline', async () => {
    const res = await enqueue({ key: 'spin' });
    const done = await settled(res.body[0].jobId);
    expect(done.state).toBe('failed');
    expect(done.lastRun.error).toMatch(/^plugin_timeout: .*CPU time limit/);
    // The CPU limit replaces the isolate (not always the worker): wait until the plugin runs again.
    await workerBack(-1);
  });
});

describe('cancellation', () => {
  it('a running job is refused its next progress report, rolls back and is not retried', async () => {
    const res = await enqueue({ key: 'waiter' });
    const id = res.body[0].jobId;
    await waitFor(async () => (await job(id)).progress, 'waiter progress');
    const cancel = await t.api.post(`/api/plugins/${KEY}/job-queue/${id}/cancel`, {});
    expect(cancel.status, cancel.text).toBe(200);
    expect(cancel.body).toMatchObject({ cancelled: true, state: 'cancelled' });
    await waitFor(async () => (await job(id)).lastRun?.status === 'cancelled', 'cancelled run');
    expect(await runsOf(id)).toEqual([]);
    const activity = (await t.sql.query("select details from activity_log where action = 'plugin.job_cancelled'")).rows;
    expect(activity).toEqual([{ details: { plugin: KEY, jobId: id } }]);
  });

  it('the plugin cancels its own queued job; another company cannot, nor can an unknown id', async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const res = await enqueue({ key: 'record', payload: { n: 9 }, options: { runAt: later } });
    const id = res.body[0].jobId;
    const fromB = await t.api.post(`/api/plugins/${KEY}/companies/${companyB}/cancel`, { jobId: id });
    expect([fromB.status, fromB.body.code]).toEqual([404, 'job_not_found']);
    const own = await t.api.post(`/api/plugins/${KEY}/companies/${companyA}/cancel`, { jobId: id });
    expect(own.body).toEqual({ cancelled: true, state: 'cancelled' });
    expect((await job(id)).state).toBe('cancelled');
  });
});

describe('attacks', () => {
  it('refuses a job key the manifest does not declare', async () => {
    const res = await enqueue({ key: 'undeclared' });
    expect([res.status, res.body.code]).toEqual([403, 'job_not_declared']);
  });

  it('refuses a payload over 64 KiB', async () => {
    const res = await enqueue({ key: 'record', payload: { n: 1, pad: 'x'.repeat(70_000) } });
    expect([res.status, res.body.code]).toEqual([413, 'job_payload_too_large']);
  });

  it('bounds a flood of enqueues per call, and queues none of them when the call fails', async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const before = (await t.sql.query("select count(*)::int as n from keel_jobs.job where name = 'plugin/enqueue-fx/enqueued'")).rows[0].n;
    const res = await enqueue({ key: 'record', payload: { n: 1 }, options: { runAt: later }, count: 101 });
    expect([res.status, res.body.code]).toEqual([429, 'too_many_enqueues']);
    expect((await t.sql.query("select count(*)::int as n from keel_jobs.job where name = 'plugin/enqueue-fx/enqueued'")).rows[0].n).toBe(before);
  });

  it('bounds the jobs one plugin keeps queued in one company', async () => {
    const flood = await createCompany(t.api);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    for (let i = 0; i < 10; i++) {
      const res = await enqueue({ key: 'record', payload: { n: i }, options: { runAt: later }, count: 100 }, flood.id);
      expect(res.status, res.text).toBe(200);
    }
    const over = await enqueue({ key: 'record', payload: { n: 1 }, options: { runAt: later } }, flood.id);
    expect([over.status, over.body.code]).toEqual([429, 'job_queue_full']);
    // Another company is not held back by it.
    expect((await enqueue({ key: 'record', payload: { n: 1 }, options: { runAt: later } })).status).toBe(200);
  });

  it("refuses to cancel another plugin's job", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const res = await enqueue({ key: 'record', payload: { n: 1 }, options: { runAt: later } });
    const id = res.body[0].jobId;
    // A job is looked up in its own plugin's queue only: the same id through another plugin is unknown.
    const otherPlugin = await installAndEnable(t, fileURLToPath(new URL('./fixtures/job-fx', import.meta.url)));
    const byOther = await t.api.post(`/api/plugins/${otherPlugin}/job-queue/${id}/cancel`, {});
    expect([byOther.status, byOther.body.code]).toEqual([404, 'job_not_found']);
    expect((await job(id)).state).toBe('queued');
    const own = await t.api.post(`/api/plugins/${KEY}/job-queue/${id}/cancel`, {});
    expect(own.body).toMatchObject({ cancelled: true, state: 'cancelled', job: { id, state: 'cancelled' } });
  });

  it('rejects bad options and keeps operator routes to instance admins', async () => {
    for (const options of [{ runAt: 'tomorrow' }, { singletonKey: '' }, { retryLimit: 11 }, { priority: 1 }, { runAt: new Date(Date.now() + 40 * 86_400_000).toISOString() }]) {
      const res = await enqueue({ key: 'record', payload: { n: 1 }, options });
      expect([res.status, res.body.code], JSON.stringify(options)).toEqual([400, 'invalid_arguments']);
    }
    const agentToken = await createAgentKey(t.api, agentA);
    const someJob = (await enqueue({ key: 'record', payload: { n: 1 }, options: { runAt: new Date(Date.now() + 3_600_000).toISOString() } })).body[0].jobId;
    for (const [method, path] of [['get', `/api/plugins/${KEY}/job-queue`], ['get', `/api/plugins/${KEY}/job-queue/${someJob}`], ['post', `/api/plugins/${KEY}/job-queue/${someJob}/cancel`]] as const) {
      const res = method === 'get' ? await t.api.get(path, { token: agentToken }) : await t.api.post(path, {}, { token: agentToken });
      expect(res.status, path).toBe(403);
    }
    const bad = await t.api.get(`/api/plugins/${KEY}/job-queue?state=exploded`);
    expect(bad.status).toBe(400);
    const queued = await t.api.get(`/api/plugins/${KEY}/job-queue?state=queued&jobKey=record&limit=5`);
    expect(queued.status).toBe(200);
    expect(queued.body.every((j: any) => j.state === 'queued' && j.jobKey === 'record')).toBe(true);
  });
});

describe('a job whose every slot is taken', () => {
  it('goes back to the queue without spending an attempt, and runs once a slot frees', async () => {
    // A run of the same job key holds the only slot (concurrency 1), as another process's would.
    const holder = (await t.sql.query(
      "insert into plugin_job_runs (plugin_key, job_key, trigger, status, job_id, company_id, attempt) values ($1, 'record', 'enqueued', 'running', gen_random_uuid(), $2, 1) returning id",
      [KEY, companyA])).rows[0].id;
    const id = (await enqueue({ key: 'record', payload: { n: 77 } })).body[0].jobId;
    const requeued = async () => (await t.sql.query("select (data->>'requeued')::int as n from keel_jobs.job where id = $1", [id])).rows[0]?.n ?? 0;
    await waitFor(async () => (await requeued()) >= 2, 'the job to go back to the queue twice');
    expect(await runsOf(id)).toEqual([]);
    await t.sql.query("update plugin_job_runs set status = 'succeeded', finished_at = now() where id = $1", [holder]);
    const done = await settled(id);
    expect(done).toMatchObject({ state: 'succeeded', retries: 0, retryLimit: 2, lastRun: { status: 'succeeded', attempt: 1 } });
    expect((await runsOf(id)).map((r: any) => r.attempt)).toEqual([1]);
  });
});

describe('two Keel processes on one database', () => {
  let peer: PeerKernel;
  beforeAll(async () => { peer = await startPeerKernel(t); });
  afterAll(async () => { await peer?.stop(); });

  it('runs each enqueued job exactly once, and never more runs of a job key at once than its concurrency', async () => {
    await waitFor(async () => (await enqueue({ key: 'serial', payload: { warmup: true } }, companyA, peer.api)).status === 200, 'the plugin on the peer');
    const ids: string[] = [];
    for (const api of [t.api, peer.api]) {
      const res = await enqueue({ key: 'serial', payload: { batch: true }, count: 6 }, companyA, api);
      expect(res.status, res.text).toBe(200);
      ids.push(...res.body.map((r: any) => r.jobId));
    }
    for (const id of ids) expect((await settled(id)).state).toBe('succeeded');
    const runs = (await t.sql.query("select job_id, started_at, finished_at from plugin_enqueuefx.runs where job = 'serial' and payload = '{\"batch\": true}' order by started_at")).rows;
    expect(runs.map((r: any) => r.job_id).sort()).toEqual([...ids].sort());
    for (let i = 1; i < runs.length; i++) expect(runs[i].started_at.getTime()).toBeGreaterThanOrEqual(runs[i - 1].finished_at.getTime());
  });

  it('moves each staged job into the queue once when both processes sweep the same rows', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `5b2f0c1e-7a3d-4c6b-8e1f-${String(i).padStart(12, '0')}`);
    await t.sql.query(`insert into keel_host.staged_jobs (id, plugin, invocation_id, company_id, job)
      select id::uuid, $1, 'calls-whose-process-died', $2::uuid, jsonb_build_object('id', id, 'plugin', $1::text, 'invocationId', 'calls-whose-process-died',
        'data', jsonb_build_object('jobKey', 'record', 'companyId', $2::text, 'payload', jsonb_build_object('n', 900), 'singletonKey', null),
        'runAt', null, 'singletonKey', 'job/' || id, 'retryLimit', 2, 'deadlineMs', 10000)
      from unnest($3::text[]) as id`, [KEY, companyA, ids]);
    for (const id of ids) expect((await settled(id)).state).toBe('succeeded');
    const runs = (await t.sql.query('select job_id from plugin_enqueuefx.runs where job_id = any($1::uuid[])', [ids])).rows;
    expect(runs.map((r: any) => r.job_id).sort()).toEqual([...ids].sort());
    expect((await t.sql.query('select count(*)::int as n from keel_host.staged_jobs where id = any($1::uuid[])', [ids])).rows[0].n).toBe(0);
  });
});

describe('uninstall', () => {
  it('takes the plugin\'s queued jobs with it: the same key installed again runs nothing it never enqueued', async () => {
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const res = await enqueue({ key: 'record', payload: { n: 77 }, options: { runAt: later } });
    expect(res.status, res.text).toBe(200);
    expect((await job(res.body[0].jobId)).state).toBe('queued');
    expect((await t.api.post(`/api/plugins/${KEY}/disable`, {})).status).toBe(200);
    expect((await t.api.delete(`/api/plugins/${KEY}`)).status).toBe(200);
    const left = await t.sql.query('select count(*)::int as n from keel_jobs.job where name = $1', [`plugin/${KEY}/enqueued`]);
    expect(left.rows[0].n).toBe(0);
    await installAndEnable(t, FIXTURE);
    expect((await t.api.get(`/api/plugins/${KEY}/job-queue/${res.body[0].jobId}`)).status).toBe(404);
  });
});
