import type { ExecutionSummary } from '../../sdk/capabilities/executions.ts';
import { iso, int, prepared, type Queryable, type Row } from '../db/database.ts';
import type { AnyExecutionRef, ExecutionRef } from './execution-log.ts';
import type { AgentProcess } from './process-runner.ts';

/**
 * What every part of the executor tier shares about an execution: its row (live statuses, the
 * lease, the NOTIFY channel of cancels), the entry of one this process supervises and the
 * summary a plugin reads.
 */
export const EXECUTIONS_CHANNEL = 'keel_executions';
export const LEASE_SEC = 30;
export const LIVE = "status in ('starting', 'running')";
export const LIVE_EXECUTION_STATUSES: ReadonlySet<string> = new Set(['starting', 'running']);
/** A bound on what one company can have running at once (processes cost the machine, not the isolate). */
export const MAX_LIVE_PER_COMPANY = 100;

/** The statements every execution passes through (start, process start, end), planned once per connection (kernel/db/database.ts). */
export const RUN_STATUS_FOR_SHARE = prepared('execution_run_for_share', 'select status from runs where id = $1 for share');
export const INSERT_EXECUTION = prepared('execution_insert', `
  insert into executions (id, company_id, agent_id, run_id, plugin, kind, owner_instance, owner_node, lease_until)
  values ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9)) on conflict (run_id) do nothing returning *`);
export const SCOPE_BEFORE_START = prepared('execution_scope_before_start', `
  select a.status as agent_status, c.status as company_status, e.cancel_requested_at, e.cancel_reason
    from executions e join agents a on a.id = e.agent_id join companies c on c.id = e.company_id where e.id = $1`);
export const PROCESS_RUNNING = prepared('execution_process_running', `
  update executions set status = 'running', pid = $1, started_at = now(), deadline_at = now() + make_interval(secs => $2) where id = $3 and ${LIVE}`);
export const FINISH_EXECUTION = prepared('execution_finish', `
  update executions set status = $1, exit_code = $2, signal = $3, http_status = $4, error_code = $5, response = $6::jsonb,
         log_bytes = $7, log_sha256 = $8, finished_at = now()
   where id = $9 and ${LIVE} and owner_instance = $10 returning *`);

/** Who asks: the plugin and the company the brokered call serves; `contributes`: whether the plugin contributes an adapter type (the kernel point agent.adapter-config). */
export interface ExecutionCaller { plugin: string; companyId: string; contributes?: (adapterType: string) => boolean }

/** An execution this process supervises (agent runs here, workspace processes in workspace-processes.ts). */
export interface Live<Ref extends AnyExecutionRef = ExecutionRef> {
  ref: Ref;
  logChannel: string | null;
  cancelReason: string | null;
  timedOut: boolean;
  graceSec: number;
  process: AgentProcess | null;
  abort: AbortController | null;
  /** 2 once a tool launch's retryOnce started the command again. */
  attempts?: number;
}

export interface Finish { exitCode: number | null; signal: string | null; httpStatus: number | null; errorCode: string | null; response: unknown; failed: boolean }

/** The variable that recognises an execution's process group in /proc (the run's, or a workspace process's own id). */
export function orphanMarker(row: Row): string {
  return row.run_id ? `SERVICE_RUN_ID=${row.run_id}` : `KEEL_EXECUTION_ID=${row.id}`;
}

export function toSummary(row: Row): ExecutionSummary {
  return {
    executionId: row.id, runId: row.run_id, agentId: row.agent_id, kind: row.kind, status: row.status,
    pid: row.pid ?? null, exitCode: row.exit_code ?? null, signal: row.signal ?? null, httpStatus: row.http_status ?? null,
    errorCode: row.error_code ?? null, logBytes: int(row.log_bytes), logSha256: row.log_sha256 ?? null,
    startedAt: iso(row.started_at), finishedAt: iso(row.finished_at), createdAt: iso(row.created_at)!,
  };
}

/** The most executions one read of several answers (as many runs as ctx.runs.get takes). */
export const MAX_EXECUTIONS_READ = 200;

/**
 * The executions among these ids the caller may reach, in the company its call serves: those its
 * plugin started and, for a read, those of runs it opened (the runtime reads the execution a
 * contributed adapter's plugin started for its run). Anything else is left out, like an unknown id.
 */
export function reachableExecutions(db: Queryable, caller: ExecutionCaller, ids: readonly string[], read: boolean): Promise<Row[]> {
  return db.query<Row>(
    `select e.* from executions e join runs r on r.id = e.run_id
      where e.id in (select jsonb_array_elements_text(?::jsonb)::uuid) and e.company_id = ? and (e.plugin = ? or (?::boolean and r.opened_by_plugin = ?))`,
    [JSON.stringify(ids.map((id) => id.toLowerCase())), caller.companyId, caller.plugin, read, caller.plugin]);
}
