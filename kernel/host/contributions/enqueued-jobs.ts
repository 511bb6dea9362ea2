import { randomUUID } from 'node:crypto';
import type { Job, PgBoss } from 'pg-boss';
import type { JobManifest } from '../../../sdk/plugin/manifest.ts';
import { prepared, type Row } from '../../db/database.ts';
import { KeelError, validationFailed } from '../../http/errors.ts';
import type { ExtensionHost, LoadedPlugin } from '../extension-host.ts';
import { describeIssues, pluginBodyAjv, schemaIssues } from '../../../sdk/manifest/plugin-schema-ajv.ts';
import type { InvokeResult } from '../plugin-process.ts';
import { JOB_ENGINE_SCHEMA, jobDeadlineOf } from './jobs.ts';
import type { JobRuns } from './job-runs.ts';
import { readCompany } from '../../tenancy/company-access.ts';
import { appendPluginLog } from './plugin-log.ts';
import { DEFAULT_RETRY_LIMIT, ENQUEUE_LIMITS, enqueueOptions } from './enqueue-options.ts';
import { ENGINE_STATE, SELECT_JOBS, STATE_NAMES, toEnqueuedJobJson, type EnqueuedData } from './enqueued-job-json.ts';


/** Retries wait 1 s, 2 s, 4 s, ... (with jitter), at most 5 minutes. */
const RETRY_DELAY_SECONDS = 1;
const RETRY_DELAY_MAX_SECONDS = 300;
/**
 * Runs of one plugin's enqueued jobs this process starts at once (each job key also has its own
 * concurrency, at most 16): as many as one key may run, so that a key declared with 16 gets them in
 * one process. A job mostly waits on the database; with 4, a fleet's heartbeats (a timer slot and a
 * start-runs pass per run, each some hundreds of ms on a loaded machine) queued for seconds behind
 * each other while the CPU idled (test/bench/fleet.bench.ts).
 */
const LOCAL_CONCURRENCY = 16;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A checked job, as the kernel signs it for the call's transaction to stage (keel_bridge.stage_job). */
interface JobTicket { id: string; plugin: string; invocationId: string; data: EnqueuedData; runAt: string | null; singletonKey: string; retryLimit: number; deadlineMs: number }
/** Statements of every enqueue and every run, planned once per connection (database.ts). */
const QUEUED_UNDER_KEY = prepared('job_queued_under_key',
  `select id from ${JOB_ENGINE_SCHEMA}.job where name = $1 and singleton_key = $2 and state in ('created', 'retry', 'active') limit 1`);
const QUEUED_IN_COMPANY = prepared('job_queued_in_company',
  `select count(*)::int as n from ${JOB_ENGINE_SCHEMA}.job where name = $1 and state in ('created', 'retry') and data->>'companyId' is not distinct from $2`);
const JOB_STATE = prepared('job_state', `select id, state, data from ${JOB_ENGINE_SCHEMA}.job where name = $1 and id = $2`);

/** How often staged jobs are looked for that no call moved to the engine (their process died after the commit). */
const SWEEP_MS = 2000;


export function enqueuedQueueOf(pluginKey: string): string {
  return `plugin/${pluginKey}/enqueued`;
}

/**
 * Work a plugin enqueues at run time (`ctx.jobs.enqueue`), on the same pg-boss engine as
 * scheduled jobs, in a queue of its own per plugin.
 *
 * Consistency: the kernel checks an enqueue and signs it as a ticket; the worker stages the
 * ticket in the call's own transaction (keel_bridge.stage_job into keel_host.staged_jobs), so
 * the job commits or rolls back with the call's writes. Once the call has answered ok, the
 * kernel moves its staged jobs into the engine before the caller gets the answer; a sweep moves
 * whatever a process that died after the commit left staged. Each staged row moves once (SKIP
 * LOCKED, and the engine's insert is idempotent by job id), so nothing committed is lost and
 * nothing is queued twice.
 *
 * Each run is leased twice through the database: the engine hands a job to one process (SKIP
 * LOCKED), and a run row in plugin_job_runs holds one of the job key's `concurrency` slots
 * (checked under an advisory lock, across every process). A job always runs in the company of
 * the call that enqueued it, recorded by the host, never named by the plugin.
 */
export class EnqueuedJobs {
  private readonly host: ExtensionHost;
  private readonly boss: PgBoss;
  private readonly runs: JobRuns;
  /** Jobs checked for calls still in flight, by invocation id (their singleton keys answer a repeat within the call). */
  private readonly issued = new Map<string, Array<{ id: string; singletonKey: string }>>();
  private sweepTimer: NodeJS.Timeout | null = null;
  /** Calls that have answered (their record in host.invocations): an enqueue still in flight for one is refused, not kept. */
  private readonly answered = new WeakSet<object>();

  constructor(host: ExtensionHost, boss: PgBoss, runs: JobRuns) {
    this.host = host;
    this.boss = boss;
    this.runs = runs;
    host.afterInvoke.push((invocationId, result) => this.afterCall(invocationId, result));
    host.afterUninstall.push((key) => this.uninstalled(key));
  }

  /**
   * An uninstalled plugin's jobs go with it, queued or staged: a later plugin installed under the
   * same key must not run work it never enqueued. (Its job runs stay, as history.)
   */
  private async uninstalled(key: string): Promise<void> {
    await this.host.kernel.db.exec('delete from keel_host.staged_jobs where plugin = ?', [key]);
    await this.boss.deleteQueue(enqueuedQueueOf(key)).catch((error: Error) => this.host.kernel.log.warn({ err: error, plugin: key }, 'could not delete the queue of an uninstalled plugin'));
  }

  /** Starts the sweep that moves staged jobs no call moved (after a crash) into the engine. */
  start(): void {
    const sweep = () => {
      this.sweepTimer = setTimeout(() => {
        this.relay(null).catch((error: Error) => this.host.kernel.log.warn({ err: error }, 'could not move staged plugin jobs into the job engine')).finally(() => { if (this.sweepTimer) sweep(); });
      }, SWEEP_MS);
      this.sweepTimer.unref();
    };
    sweep();
  }

  stop(): void {
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    this.sweepTimer = null;
  }

  // ---- activation ------------------------------------------------------------------------

  async activate(plugin: LoadedPlugin): Promise<void> {
    const queue = enqueuedQueueOf(plugin.key);
    await this.boss.offWork(queue).catch(() => undefined);
    const declared = plugin.manifest.jobs ?? [];
    if (!(plugin.row.granted_capabilities ?? []).includes('jobs.enqueue') || declared.length === 0) return;
    await this.boss.createQueue(queue, {
      // One queued-or-running job per singleton key (keys are scoped by company and job key; a job
      // enqueued without one gets its own id as key, so it never collides).
      policy: 'exclusive',
      retryLimit: DEFAULT_RETRY_LIMIT,
      retryBackoff: true,
      retryDelay: RETRY_DELAY_SECONDS,
      retryDelayMax: RETRY_DELAY_MAX_SECONDS,
      retentionSeconds: 7 * 86_400,
      deleteAfterSeconds: 7 * 86_400,
      notify: true,
    });
    // A queue created before notify existed keeps its old settings through createQueue.
    await this.boss.updateQueue(queue, { notify: true });
    // The engine skips a job key whose running jobs fill its concurrency; the run lease (acquireSlot)
    // is what guarantees the bound when two processes fetch at the same moment.
    const tiers = Object.fromEntries(declared.map((job) => [job.key, job.concurrency ?? 1]));
    // NOTIFY wakes the workers when a job is created (any process); a worker that finished a job
    // looks for the next at once (fetchAgain); the 1 s poll stays as the floor.
    await this.boss.work<EnqueuedData>(queue, {
      pollingIntervalSeconds: 1, notifyPollingIntervalSeconds: 1, batchSize: 1, localConcurrency: LOCAL_CONCURRENCY,
      groupConcurrency: { default: 1, tiers },
    }, async ([job]) => {
      if (!job) return;
      try {
        await this.run(plugin.key, job);
      } finally {
        this.fetchAgain(queue);
      }
    });
  }

  /**
   * Lets the worker that ran a job look for the next one as soon as it is done. The engine's
   * workers otherwise wait out the poll interval after each job (burst fetching needs a batch
   * size over 1 or the engine's minute-old queue counts), so each of the 16 took at most one job
   * a second: 16 a second for a plugin, below the 16.7 heartbeats a second of 1,000 agents, and
   * a backlog, once a burst had made one, never drained. The handler cannot tell which of the
   * queue's workers runs it, so every worker holding a job is told: each looks once more when its
   * own job ends, and waits for the poll again only when that finds nothing.
   */
  private fetchAgain(queue: string): void {
    for (const worker of this.boss.getWipData()) {
      if (worker.name === queue && worker.count > 0) this.boss.notifyWorker(worker.id);
    }
  }

  async deactivate(key: string): Promise<void> {
    // Queued jobs stay: they run when the plugin is enabled again (an upgrade, a restart).
    await this.boss.offWork(enqueuedQueueOf(key)).catch(() => undefined);
  }

  // ---- ctx.jobs --------------------------------------------------------------------------

  /** Checks an enqueue; answers the job already queued under its singleton key, or a ticket for the call's transaction to stage. */
  async check(plugin: LoadedPlugin, invocationId: string, companyId: string | null, args: unknown[]): Promise<{ jobId: string; duplicate: true } | { jobId: string; duplicate: false; ticket: string; signature: string }> {
    const [key, rawPayload, options] = args;
    if (typeof key !== 'string') throw new KeelError(400, 'invalid_arguments', 'jobs.enqueue(key, payload?, { runAt?, singletonKey?, retryLimit? })');
    const job = plugin.manifest.jobs?.find((j) => j.key === key);
    if (!job) throw new KeelError(403, 'job_not_declared', `${plugin.key} declares no job "${key.slice(0, 64)}"; declare it under jobs in plugin.json`);
    if (this.host.invocations.get(invocationId)?.batched) {
      throw new KeelError(409, 'job_enqueue_unavailable', `${plugin.key}: ctx.jobs.enqueue is not available in a batched route (a batch may run its calls twice); enqueue from a route without batch`);
    }
    const payload = rawPayload ?? null;
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    if (bytes > ENQUEUE_LIMITS.payloadBytes) {
      throw new KeelError(413, 'job_payload_too_large', `The payload of job ${key} is ${bytes} bytes of JSON; at most ${ENQUEUE_LIMITS.payloadBytes} are allowed; store large data in the plugin's tables and pass its id`);
    }
    if (job.payloadSchema) {
      const issues = schemaIssues(pluginBodyAjv, job.payloadSchema, payload, '(payload)');
      if (issues.length) throw validationFailed(describeIssues(`payload of job ${key}`, issues), issues);
    }
    const { runAt, singletonKey, retryLimit } = enqueueOptions(options, job);
    const mine = this.issued.get(invocationId) ?? [];
    if (mine.length >= ENQUEUE_LIMITS.perCall) {
      throw new KeelError(429, 'too_many_enqueues', `${plugin.key}: at most ${ENQUEUE_LIMITS.perCall} jobs may be enqueued by one call`);
    }
    const queue = enqueuedQueueOf(plugin.key);
    const scopedKey = singletonKey === null ? null : `${companyId ?? 'instance'}/${key}/${singletonKey}`;
    if (scopedKey !== null) {
      const same = mine.find((p) => p.singletonKey === scopedKey);
      if (same) return { jobId: same.id, duplicate: true };
      const existing = await this.host.kernel.db.maybeOne<{ id: string }>(QUEUED_UNDER_KEY, [queue, scopedKey]);
      if (existing) return { jobId: existing.id, duplicate: true };
    }
    const queued = await this.host.kernel.db.maybeOne<{ n: number }>(QUEUED_IN_COMPANY, [queue, companyId]);
    if ((queued?.n ?? 0) + mine.length >= ENQUEUE_LIMITS.queuedPerCompany) {
      throw new KeelError(429, 'job_queue_full', `${plugin.key} has ${ENQUEUE_LIMITS.queuedPerCompany} jobs queued${companyId ? ' in this company' : ''}; wait for them to run`);
    }
    // The plugin may not have awaited this enqueue: if its call answered meanwhile, nothing would queue the job.
    const call = this.host.invocations.get(invocationId);
    if (!call || this.answered.has(call)) throw new KeelError(409, 'invocation_closed', 'This ctx belongs to an invocation that has finished');
    const id = randomUUID();
    const ticket: JobTicket = {
      id, plugin: plugin.key, invocationId, data: { jobKey: key, companyId, payload, singletonKey }, runAt: runAt?.toISOString() ?? null,
      singletonKey: scopedKey ?? `job/${id}`, retryLimit, deadlineMs: jobDeadlineOf(plugin, key),
    };
    mine.push({ id, singletonKey: ticket.singletonKey });
    this.issued.set(invocationId, mine);
    const text = JSON.stringify(ticket);
    return { jobId: id, duplicate: false, ticket: text, signature: this.host.signTicket(`job:${text}`) };
  }

  /** Cancels a job of this plugin in this company (one this very call staged was taken back in its transaction already). */
  async cancel(plugin: LoadedPlugin, invocationId: string, companyId: string | null, jobId: unknown): Promise<{ cancelled: boolean; state: string }> {
    if (typeof jobId !== 'string' || !UUID.test(jobId)) throw new KeelError(400, 'invalid_arguments', 'jobs.cancel(jobId): jobId must be a uuid');
    void invocationId;
    const row = await this.find(plugin.key, jobId);
    // Another plugin's job, or another company's, is not found, exactly like an unknown id.
    if (!row || (row.data?.companyId ?? null) !== companyId) throw new KeelError(404, 'job_not_found', `${plugin.key} has no enqueued job ${jobId} in this company`);
    return this.cancelRow(plugin.key, row);
  }

  /** The operator's cancel (instance admin): any job of the plugin. */
  async cancelByOperator(pluginKey: string, jobId: string): Promise<{ cancelled: boolean; state: string }> {
    const row = UUID.test(jobId) ? await this.find(pluginKey, jobId) : undefined;
    if (!row) throw new KeelError(404, 'job_not_found', `${pluginKey} has no enqueued job ${jobId.slice(0, 64)}`);
    return this.cancelRow(pluginKey, row);
  }

  private async cancelRow(pluginKey: string, row: Row): Promise<{ cancelled: boolean; state: string }> {
    if (!['created', 'retry', 'active'].includes(row.state)) return { cancelled: false, state: STATE_NAMES[row.state] ?? row.state };
    await this.boss.cancel(enqueuedQueueOf(pluginKey), row.id);
    return { cancelled: true, state: 'cancelled' };
  }

  /** Whether the job a running call serves was cancelled meanwhile (ctx.progress.report asks). */
  async cancelled(pluginKey: string, jobId: string): Promise<boolean> {
    return (await this.find(pluginKey, jobId))?.state === 'cancelled';
  }

  // ---- after the enqueuing call ----------------------------------------------------------

  private async afterCall(invocationId: string, result: InvokeResult | null): Promise<InvokeResult | null> {
    const call = this.host.invocations.get(invocationId);
    if (call) this.answered.add(call);
    const issued = this.issued.get(invocationId);
    this.issued.delete(invocationId);
    // Nothing was staged by a call that failed: its transaction rolled back.
    if (!issued?.length || !result?.ok) return result;
    // Before the caller hears of the job, it is in the engine; if this fails, it is staged and committed, and the sweep moves it.
    await this.relay(invocationId).catch((error: Error) => this.host.kernel.log.warn({ err: error, invocationId }, 'could not move staged plugin jobs into the job engine; the sweep will'));
    return result;
  }

  /**
   * Moves committed staged jobs into the engine: those of one call, or (null) any. In one kernel
   * transaction: the rows are locked (SKIP LOCKED, so another process moving the same rows skips
   * them), each job is sent under its own id (a job sent before, by a process that died before
   * its delete committed, is not inserted again), and the rows are deleted.
   */
  private async relay(invocationId: string | null): Promise<void> {
    await this.host.kernel.db.transaction(async (tx) => {
      const rows = await tx.query<{ id: string; job: JobTicket }>(
        `select id, job from keel_host.staged_jobs ${invocationId === null ? '' : 'where invocation_id = ?'} order by staged_at limit 500 for update skip locked`,
        invocationId === null ? [] : [invocationId]);
      for (const { job } of rows) {
        await this.boss.send(enqueuedQueueOf(job.plugin), job.data as unknown as object, {
          id: job.id,
          startAfter: job.runAt ? new Date(job.runAt) : undefined,
          singletonKey: job.singletonKey,
          retryLimit: job.retryLimit,
          retryBackoff: true,
          retryDelay: RETRY_DELAY_SECONDS,
          retryDelayMax: RETRY_DELAY_MAX_SECONDS,
          expireInSeconds: Math.ceil(job.deadlineMs / 1000) + 60,
          group: { id: job.data.jobKey, tier: job.data.jobKey },
        });
      }
      if (rows.length) await tx.exec('delete from keel_host.staged_jobs where id in (select jsonb_array_elements_text(?::jsonb)::uuid)', [JSON.stringify(rows.map((r) => r.id))]);
    });
  }

  // ---- running ---------------------------------------------------------------------------

  private async run(pluginKey: string, job: Job<EnqueuedData>): Promise<void> {
    const plugin = this.host.plugins.get(pluginKey);
    // Thrown: the engine retries it later (or another process that runs the plugin takes it).
    if (!plugin?.process) throw new Error(`${pluginKey} is not running in this process`);
    const data = job.data;
    const attempt = { pluginKey, jobKey: String(data?.jobKey), jobId: job.id, companyId: data?.companyId ?? null, attempt: job.retryCount - (data?.requeued ?? 0) + 1 };
    const declared = plugin.manifest.jobs?.find((j) => j.key === data?.jobKey);
    const refusal = declared ? await this.refusal(plugin, declared, data) : `the plugin no longer declares job ${attempt.jobKey}`;
    if (refusal) {
      // Final: running it again would be refused the same way.
      await this.runs.refuse(attempt, refusal);
      appendPluginLog(plugin, 'error', `enqueued job ${attempt.jobKey} ${job.id} refused: ${refusal}`);
      return;
    }
    const deadlineMs = jobDeadlineOf(plugin, declared!.key);
    const run = await this.host.kernel.db.transaction((tx) => this.runs.acquireSlot(tx, { ...attempt, concurrency: declared!.concurrency ?? 1, deadlineMs }));
    if (!run) {
      // Every slot of the job key is taken (another process fetched at the same moment): back to the
      // queue, no attempt spent. The engine completes a claim once its handler returns, fenced to the
      // claim's retry count; were the count left as it was, that completion could land on the next
      // claim of the same job (another process's, made in between) and settle it unrun. So the count
      // and the limit both go up by one, and `requeued` keeps the attempt numbers true.
      await this.host.kernel.db.exec(
        `update ${JOB_ENGINE_SCHEMA}.job set state = 'created', started_on = null, heartbeat_on = null,
            retry_count = retry_count + 1, retry_limit = retry_limit + 1,
            data = jsonb_set(data, '{requeued}', to_jsonb(coalesce((data->>'requeued')::int, 0) + 1))
          where name = ? and id = ? and state = 'active' and retry_count = ?`,
        [enqueuedQueueOf(pluginKey), job.id, job.retryCount]);
      return;
    }
    let outcome: { ok: boolean; error?: string };
    try {
      const result = await this.host.invoke(pluginKey, 'job', declared!.key, data.payload, {
        companyId: attempt.companyId, actor: { type: 'system', id: 'job-queue', agentId: null }, runId: null,
        job: { runId: run.id, jobId: job.id, attempt: attempt.attempt },
      }, {
        transactional: true,
        deadlineMs,
        defaultActivity: { action: `plugin.${pluginKey}.job.${declared!.key}`, entityType: 'plugin_job_run', entityId: run.id, onlyIfWritten: true },
      });
      outcome = result.ok ? { ok: true } : { ok: false, error: `${result.error?.code ?? 'plugin_error'}: ${result.error?.message ?? 'failed'}` };
    } catch (error) {
      outcome = { ok: false, error: `${(error as KeelError).code ?? 'host_error'}: ${(error as Error).message}` };
    }
    const cancelled = await this.cancelled(pluginKey, job.id).catch(() => false);
    await this.runs.finish(run.id, { ...outcome, cancelled }).catch((failure: Error) => this.host.kernel.log.error({ err: failure, runId: run.id }, 'could not record job run'));
    if (cancelled || outcome.ok) return;
    appendPluginLog(plugin, 'error', `enqueued job ${declared!.key} ${job.id} failed (attempt ${attempt.attempt}): ${outcome.error}`, { runId: run.id, ...(attempt.companyId ? { companyId: attempt.companyId } : {}) });
    // The engine retries it with backoff until its retryLimit, then marks it failed.
    throw new Error(outcome.error);
  }

  /** Why a job may not run now at all: its company is gone or archived, its payload no longer matches. */
  private async refusal(plugin: LoadedPlugin, declared: JobManifest, data: EnqueuedData): Promise<string | null> {
    if (data.companyId) {
      // The company guard's cached row (evicted in every process when the company changes): one query less per job.
      const company = await readCompany(this.host.kernel.db, data.companyId);
      if (!company || company.status === 'archived') return `company ${data.companyId} is ${company ? 'archived' : 'gone'}`;
    }
    if (declared.payloadSchema) {
      const issues = schemaIssues(pluginBodyAjv, declared.payloadSchema, data.payload, '(payload)');
      if (issues.length) return `${describeIssues(`payload of job ${declared.key}`, issues)} (the plugin's payloadSchema changed since it was enqueued)`;
    }
    void plugin;
    return null;
  }

  // ---- operators -------------------------------------------------------------------------

  private find(pluginKey: string, jobId: string): Promise<Row | undefined> {
    return this.host.kernel.db.maybeOne(JOB_STATE, [enqueuedQueueOf(pluginKey), jobId]);
  }

  /** Newest first, with the latest run (and its progress) of each. */
  async list(pluginKey: string, filter: { state?: string; jobKey?: string; limit: number }): Promise<Array<Record<string, unknown>>> {
    const where = ['j.name = ?'];
    const params: unknown[] = [enqueuedQueueOf(pluginKey)];
    if (filter.state !== undefined) { where.push('j.state = ?'); params.push(ENGINE_STATE[filter.state]); }
    if (filter.jobKey !== undefined) { where.push("j.data->>'jobKey' = ?"); params.push(filter.jobKey); }
    params.push(filter.limit);
    const rows = await this.host.kernel.db.query(`${SELECT_JOBS} where ${where.join(' and ')} order by j.created_on desc, j.id limit ?`, params);
    return rows.map((row) => toEnqueuedJobJson(pluginKey, row));
  }

  async get(pluginKey: string, jobId: string): Promise<Record<string, unknown>> {
    const row = UUID.test(jobId) ? await this.host.kernel.db.maybeOne(`${SELECT_JOBS} where j.name = ? and j.id = ?`, [enqueuedQueueOf(pluginKey), jobId]) : undefined;
    if (!row) throw new KeelError(404, 'job_not_found', `${pluginKey} has no enqueued job ${jobId.slice(0, 64)}`);
    return toEnqueuedJobJson(pluginKey, row);
  }
}

