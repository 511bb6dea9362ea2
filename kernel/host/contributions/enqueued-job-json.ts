import type { Row } from '../../db/database.ts';
import { JOB_ENGINE_SCHEMA } from './jobs.ts';

/** What the kernel stores with a job; the plugin never writes the engine's tables. */
export interface EnqueuedData {
  jobKey: string; companyId: string | null; payload: unknown; singletonKey: string | null;
  /** How often the job went back to the queue with no slot free (each raised its retry count and limit by one). */
  requeued?: number;
}

/** Engine states as operators see them. */
export const STATE_NAMES: Record<string, string> = { created: 'queued', retry: 'retrying', active: 'running', completed: 'succeeded', cancelled: 'cancelled', failed: 'failed' };
export const ENQUEUED_STATES = Object.values(STATE_NAMES);
export const ENGINE_STATE = Object.fromEntries(Object.entries(STATE_NAMES).map(([engine, shown]) => [shown, engine]));

/** A job with the latest of its runs (and that run's progress). */
export const SELECT_JOBS = `
  select j.id, j.state, j.data, j.retry_count, j.retry_limit, j.start_after, j.created_on, j.started_on, j.completed_on,
         r.id as run_id, r.status as run_status, r.error as run_error, r.progress, r.progress_at, r.attempt as run_attempt
    from ${JOB_ENGINE_SCHEMA}.job j
    left join lateral (select * from plugin_job_runs r where r.job_id = j.id order by r.started_at desc limit 1) r on true`;

function isoOf(value: unknown): string | null {
  return value === null || value === undefined ? null : new Date(value as string).toISOString();
}

/** An enqueued job as operators see it; the payload is shown (secrets delivered to the plugin never reach it: the worker redacts them from kernel calls). */
export function toEnqueuedJobJson(pluginKey: string, row: Row): Record<string, unknown> {
  const data = (row.data ?? {}) as Partial<EnqueuedData>;
  return {
    id: row.id,
    pluginKey,
    jobKey: data.jobKey ?? null,
    companyId: data.companyId ?? null,
    state: STATE_NAMES[row.state] ?? row.state,
    singletonKey: data.singletonKey ?? null,
    payload: data.payload ?? null,
    retries: row.retry_count - (data.requeued ?? 0),
    retryLimit: row.retry_limit - (data.requeued ?? 0),
    runAt: isoOf(row.start_after),
    createdAt: isoOf(row.created_on),
    startedAt: isoOf(row.started_on),
    finishedAt: isoOf(row.completed_on),
    progress: row.progress ?? null,
    progressAt: isoOf(row.progress_at),
    lastRun: row.run_id ? { id: row.run_id, status: row.run_status, attempt: row.run_attempt, error: row.run_error ?? null } : null,
  };
}
