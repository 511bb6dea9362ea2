import { loadavg } from 'node:os';
import pg from 'pg';

export interface ConnectionSample {
  total: number; active: number; idleInTransaction: number;
  /** What the non-idle backends wait on (`type:event`, or `cpu` when none), to tell a lock or a pool from work. */
  waits: Record<string, number>;
  /** The runtime's jobs due and not yet taken by a worker, by job key: a backlog means the queue, not the database, is behind. */
  backlog: Record<string, number>;
  /** The runtime's jobs the engine has handed to a worker, by job key, and the job runs the kernel holds open for them (`runs`): a backlog beside few running jobs means the workers do not take them. */
  running: Record<string, number>;
  /** Event deliveries not yet handled, by subscribing plugin (`events->runtime`): work that competes with the heartbeats. */
  deliveries: Record<string, number>;
}

/** The database's client connections, apart from the benchmark's own (application_name fleet-bench). */
export async function sampleConnections(pool: pg.Pool): Promise<ConnectionSample> {
  const { rows } = await pool.query(`select state, coalesce(wait_event_type || ':' || wait_event, 'cpu') as wait
    from pg_stat_activity where backend_type = 'client backend' and application_name <> 'fleet-bench'`);
  const waits: Record<string, number> = {};
  for (const row of rows) if (row.state !== 'idle') waits[row.wait] = (waits[row.wait] ?? 0) + 1;
  const { rows: due } = await pool.query(`select data->>'jobKey' as job, count(*)::int as n from keel_jobs.job
    where name = 'plugin/runtime/enqueued' and state in ('created', 'retry') and start_after <= now() group by 1`);
  const { rows: running } = await pool.query(`select data->>'jobKey' as job, count(*)::int as n from keel_jobs.job
    where name = 'plugin/runtime/enqueued' and state = 'active' group by 1
    union all select 'runs', count(*)::int from plugin_job_runs where plugin_key = 'runtime' and status = 'running'`);
  const { rows: undelivered } = await pool.query(`select subscriber, count(*)::int as n from keel_events.deliveries
    where state in ('pending', 'leased') group by 1`);
  return {
    deliveries: Object.fromEntries(undelivered.map((r) => [`events->${r.subscriber}`, r.n])),
    total: rows.length, active: rows.filter((r) => r.state === 'active').length, idleInTransaction: rows.filter((r) => r.state === 'idle in transaction').length,
    waits, backlog: Object.fromEntries(due.map((r) => [r.job, r.n])), running: Object.fromEntries(running.map((r) => [r.job, r.n])),
  };
}

/** Mean per sample of each wait (or backlog) over a minute's samples, the largest first. */
export function meanOf(samples: Array<Record<string, number>>, top = 4): string {
  const sums: Record<string, number> = {};
  for (const sample of samples) for (const [key, n] of Object.entries(sample)) sums[key] = (sums[key] ?? 0) + n;
  return Object.entries(sums).sort((a, b) => b[1] - a[1]).slice(0, top).map(([key, n]) => `${key} ${(n / Math.max(1, samples.length)).toFixed(1)}`).join(', ') || '-';
}

export interface RunSample {
  status: string;
  finishedAt: number | null;
  /** The process's own start (its timeOrigin), or the run's start when it answered none. */
  startedAt: number | null;
  wokenAt: number;
  /** When the heartbeat slot that woke the run was due (the job's runAt). */
  dueAt: number | null;
  /** When the job engine handed that slot's job to a worker. */
  jobStartedAt: number | null;
  commented: boolean;
  usageReports: number;
}

/** The heartbeat runs created since `since` (ms since the epoch), with their wakeup and the due time of their slot. */
export async function heartbeatRuns(pool: pg.Pool, since: number): Promise<RunSample[]> {
  const { rows } = await pool.query(
    `select r.status, r.finished_at, r.started_at, r.result_json, r.usage_json, w.created_at as woken_at, j.start_after as due_at, j.started_on as job_started_at
       from plugin_runtime.runs r
       join plugin_runtime.wakeups w on w.id = r.wakeup_id
       left join keel_jobs.job j on j.name = 'plugin/runtime/enqueued'
        and j.singleton_key = w.company_id || '/heartbeat/hb-' || w.agent_id || '-' || substr(w.idempotency_key, 7)
      where w.source = 'timer' and w.reason = 'heartbeat_timer' and r.created_at >= to_timestamp($1::double precision / 1000)`, [since]);
  const ms = (value: unknown) => (value === null || value === undefined ? null : new Date(value as string).getTime());
  return rows.map((row) => ({
    status: row.status,
    finishedAt: ms(row.finished_at),
    startedAt: typeof row.result_json?.startedAt === 'number' ? row.result_json.startedAt : ms(row.started_at),
    wokenAt: ms(row.woken_at)!,
    dueAt: ms(row.due_at),
    jobStartedAt: ms(row.job_started_at),
    commented: row.result_json?.commented === true,
    usageReports: Number(row.usage_json?.reports ?? 0),
  }));
}

/** Timer wakes that found the agent's previous run still queued or running (coalesced into it, no new run). */
export async function coalescedSince(pool: pg.Pool, since: number, until: number): Promise<number> {
  const { rows } = await pool.query(`select count(*)::int as n from plugin_runtime.wakeups where source = 'timer' and status = 'coalesced'
    and created_at >= to_timestamp($1::double precision / 1000) and created_at < to_timestamp($2::double precision / 1000)`, [since, until]);
  return rows[0].n;
}

export const load1 = () => loadavg()[0]!;

/**
 * Where a run's wait goes: the runtime's jobs (a heartbeat slot firing, a start-runs pass) that
 * started in [from, until), by job key: how long each waited in the queue after it was due and
 * how long it ran (p50 / p99, ms).
 */
export async function runtimeJobTimes(pool: pg.Pool, from: number, until: number): Promise<Array<Record<string, string | number>>> {
  const { rows } = await pool.query(
    `select data->>'jobKey' as job, count(*)::int as n,
            percentile_cont(array[0.5, 0.99]) within group (order by extract(epoch from started_on - greatest(start_after, created_on)) * 1000) as waited,
            percentile_cont(array[0.5, 0.99]) within group (order by extract(epoch from completed_on - started_on) * 1000) as ran
       from keel_jobs.job
      where name = 'plugin/runtime/enqueued' and state = 'completed'
        and started_on >= to_timestamp($1::double precision / 1000) and started_on < to_timestamp($2::double precision / 1000)
      group by 1 order by 1`, [from, until]);
  const pair = (values: number[]) => values.map((v) => Math.round(v)).join(' / ');
  return rows.map((row) => ({ job: row.job, jobs: row.n, 'queued after due p50 / p99 ms': pair(row.waited), 'ran p50 / p99 ms': pair(row.ran) }));
}
