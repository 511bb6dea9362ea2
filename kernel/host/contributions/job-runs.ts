import { iso, prepared, type Database, type Row, type Tx } from '../../db/database.ts';

/** Planned once per connection (kernel/db/database.ts): every job run ends through it. */
const FINISH_JOB_RUN = prepared('job_run_finish', "update plugin_job_runs set status = $1, error = $2, finished_at = now() where id = $3 and status = 'running' returning *");

export type JobTrigger = 'schedule' | 'manual' | 'enqueued';

export interface JobRunJson {
  id: string;
  pluginKey: string;
  jobKey: string;
  trigger: JobTrigger;
  status: 'running' | 'succeeded' | 'failed' | 'cancelled';
  error: string | null;
  /** Enqueued runs: the queued job this run is an attempt of, which attempt, and the company it serves. */
  jobId: string | null;
  attempt: number | null;
  companyId: string | null;
  /** The latest ctx.progress.report of the run, and when it came. */
  progress: { done: number; total: number | null; message: string | null } | null;
  progressAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
}

/** A run whose process died keeps its lease this long past the plugin's call deadline. */
const LEASE_GRACE_MS = 60_000;

/**
 * The record of job runs (plugin_job_runs), which doubles as the lease that keeps one job
 * from running twice at once across every kernel process on the database: a run is started
 * only when no live `running` row exists for the job, checked and inserted under a
 * transaction-scoped advisory lock. A `running` row older than the call deadline plus a
 * grace period belongs to a process that stopped; it is closed as failed and no longer holds
 * the lease.
 */
export class JobRuns {
  private readonly db: Database;

  constructor(db: Database) {
    this.db = db;
  }

  /** Starts a run, or answers null when one of the same job is still running. */
  async acquire(tx: Tx, pluginKey: string, jobKey: string, trigger: JobTrigger, deadlineMs: number): Promise<Row | null> {
    await tx.query('select pg_advisory_xact_lock(hashtextextended(?, 7270))', [`plugin-job:${pluginKey}/${jobKey}`]);
    await tx.exec(
      `update plugin_job_runs set status = 'failed', error = 'abandoned: the process running it stopped before it finished', finished_at = now()
        where plugin_key = ? and job_key = ? and trigger <> 'enqueued' and status = 'running' and started_at < now() - make_interval(secs => ?)`,
      [pluginKey, jobKey, (deadlineMs + LEASE_GRACE_MS) / 1000]);
    // Enqueued runs have leases of their own (acquireSlot): they do not hold back the schedule.
    const running = await tx.maybeOne("select id from plugin_job_runs where plugin_key = ? and job_key = ? and trigger <> 'enqueued' and status = 'running' limit 1", [pluginKey, jobKey]);
    if (running) return null;
    const row = await tx.maybeOne(
      "insert into plugin_job_runs (plugin_key, job_key, trigger, status) values (?, ?, ?, 'running') returning *",
      [pluginKey, jobKey, trigger]);
    return row!;
  }

  /**
   * Starts an attempt of an enqueued job when fewer than `concurrency` attempts of the same job
   * key run (in any process); answers null otherwise. The same advisory-lock pattern as acquire,
   * with the fewest statements under the lock: every attempt of a key passes through it one at a
   * time (a fleet's heartbeats queued on it), so the count and the insert are one statement, and
   * runs abandoned by a stopped process are closed only when the slots look full.
   */
  async acquireSlot(tx: Tx, attempt: { pluginKey: string; jobKey: string; concurrency: number; deadlineMs: number; jobId: string; companyId: string | null; attempt: number }): Promise<Row | null> {
    const { pluginKey, jobKey } = attempt;
    await tx.query('select pg_advisory_xact_lock(hashtextextended(?, 7271))', [`plugin-enqueued-job:${pluginKey}/${jobKey}`]);
    const insertIfFree = () => tx.maybeOne(
      `insert into plugin_job_runs (plugin_key, job_key, trigger, status, job_id, company_id, attempt)
       select ?, ?, 'enqueued', 'running', ?, ?, ?
        where (select count(*) from plugin_job_runs where plugin_key = ? and job_key = ? and trigger = 'enqueued' and status = 'running') < ?
       returning *`,
      [pluginKey, jobKey, attempt.jobId, attempt.companyId, attempt.attempt, pluginKey, jobKey, attempt.concurrency]);
    const row = await insertIfFree();
    if (row) return row;
    const abandoned = await tx.query(
      `update plugin_job_runs set status = 'failed', error = 'abandoned: the process running it stopped before it finished', finished_at = now()
        where plugin_key = ? and job_key = ? and trigger = 'enqueued' and status = 'running' and started_at < now() - make_interval(secs => ?) returning id`,
      [pluginKey, jobKey, (attempt.deadlineMs + LEASE_GRACE_MS) / 1000]);
    return abandoned.length > 0 ? ((await insertIfFree()) ?? null) : null;
  }

  async finish(runId: string, outcome: { ok: boolean; error?: string | null; cancelled?: boolean }): Promise<Row | undefined> {
    const status = outcome.cancelled ? 'cancelled' : outcome.ok ? 'succeeded' : 'failed';
    return this.db.maybeOne(FINISH_JOB_RUN, [status, outcome.ok ? null : (outcome.error ?? 'failed').slice(0, 2000), runId]);
  }

  /** Records a run that never started (its company is gone, its payload no longer valid): it failed at once. */
  async refuse(attempt: { pluginKey: string; jobKey: string; jobId: string; companyId: string | null; attempt: number }, error: string): Promise<void> {
    await this.db.exec(
      "insert into plugin_job_runs (plugin_key, job_key, trigger, status, job_id, company_id, attempt, error, finished_at) values (?, ?, 'enqueued', 'failed', ?, ?, ?, ?, now())",
      [attempt.pluginKey, attempt.jobKey, attempt.jobId, attempt.companyId, attempt.attempt, error.slice(0, 2000)]);
  }

  /** The progress a running call reported; answers whether the run was still running. */
  async reportProgress(pluginKey: string, runId: string, progress: { done: number; total: number | null; message: string | null }): Promise<boolean> {
    const row = await this.db.maybeOne(
      "update plugin_job_runs set progress = ?::jsonb, progress_at = now() where id = ? and plugin_key = ? and status = 'running' returning id",
      [JSON.stringify(progress), runId, pluginKey]);
    return row !== undefined;
  }

  async get(runId: string): Promise<Row | undefined> {
    return this.db.maybeOne('select * from plugin_job_runs where id = ?', [runId]);
  }

  /** Newest first. */
  async list(pluginKey: string, options: { jobKey?: string; limit: number }): Promise<Row[]> {
    if (options.jobKey !== undefined) {
      return this.db.query('select * from plugin_job_runs where plugin_key = ? and job_key = ? order by started_at desc, id limit ?', [pluginKey, options.jobKey, options.limit]);
    }
    return this.db.query('select * from plugin_job_runs where plugin_key = ? order by started_at desc, id limit ?', [pluginKey, options.limit]);
  }

  /** The latest run of each job of a plugin. */
  async latest(pluginKey: string): Promise<Map<string, Row>> {
    const rows = await this.db.query(
      'select distinct on (job_key) * from plugin_job_runs where plugin_key = ? order by job_key, started_at desc', [pluginKey]);
    return new Map(rows.map((row) => [row.job_key as string, row]));
  }
}

export function toJobRunJson(row: Row): JobRunJson {
  const started = row.started_at ? new Date(iso(row.started_at)!).getTime() : null;
  const finished = row.finished_at ? new Date(iso(row.finished_at)!).getTime() : null;
  return {
    id: row.id,
    pluginKey: row.plugin_key,
    jobKey: row.job_key,
    trigger: row.trigger,
    status: row.status,
    error: row.error ?? null,
    jobId: row.job_id ?? null,
    attempt: row.attempt ?? null,
    companyId: row.company_id ?? null,
    progress: row.progress ?? null,
    progressAt: iso(row.progress_at),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    durationMs: started !== null && finished !== null ? finished - started : null,
  };
}
