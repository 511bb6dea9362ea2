import { runChannel, type Row, type RuntimeContext } from './context.ts';
import { recordActivity } from './activity.ts';

export interface RunEnd {
  status: 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'lost';
  exitCode?: number | null;
  signal?: string | null;
  httpStatus?: number | null;
  errorCode?: string | null;
  logBytes?: number;
  logSha256?: string | null;
  result?: unknown;
  cancelReason?: string | null;
  error?: string | null;
  /**
   * Store the process facts above (exit code, signal, HTTP status, log size and SHA-256) in this
   * plugin's row: only for a contributed adapter's run whose execution the executor does not
   * have. Otherwise they are the execution's, read from it (process-facts.ts), and serve here
   * only for the activity entry, the stream and the agent's last error.
   */
  keepProcessFacts?: boolean;
}

const WAKEUP_STATUS: Record<RunEnd['status'], string> = { succeeded: 'completed', failed: 'failed', cancelled: 'cancelled', timed_out: 'failed', lost: 'failed' };

/**
 * Ends a run once: its row (only while it is still queued or running: a run cancelled first
 * keeps `cancelled` when its process then ends), its wakeup and the agent's runtime state. A
 * later end of an already ended run only fills what it did not know yet (exit code, signal, log
 * size). Answers the ended row, or null when the run had ended before.
 */
export async function finishRun(ctx: RuntimeContext, run: Row, end: RunEnd): Promise<Row | null> {
  const runId = String(run.id);
  const kept: Partial<RunEnd> = end.keepProcessFacts ? end : {};
  const { rows } = await ctx.db.query(
    `update runs set status = $2, finished_at = clock_timestamp(), exit_code = $3, signal = $4, http_status = $5, error_code = $6,
            log_bytes = coalesce($7, log_bytes), log_sha256 = coalesce($8, log_sha256), result_json = coalesce($9::jsonb, result_json),
            cancel_reason = $10, updated_at = clock_timestamp()
      where id = $1 and status in ('queued', 'running') returning *`,
    [runId, end.status, kept.exitCode ?? null, kept.signal ?? null, kept.httpStatus ?? null, end.errorCode ?? null, kept.logBytes ?? null,
      kept.logSha256 ?? null, end.result === undefined || end.result === null ? null : JSON.stringify(end.result), end.cancelReason ?? null]);
  const ended = rows[0];
  if (!ended) {
    // Ended before (a cancel): keep its status, record what the process's end tells (when the executor does not keep it).
    await ctx.db.query(
      `update runs set exit_code = coalesce(exit_code, $2), signal = coalesce(signal, $3), http_status = coalesce(http_status, $4),
              log_bytes = greatest(log_bytes, coalesce($5, 0)), log_sha256 = coalesce($6, log_sha256), updated_at = clock_timestamp() where id = $1`,
      [runId, kept.exitCode ?? null, kept.signal ?? null, kept.httpStatus ?? null, kept.logBytes ?? null, kept.logSha256 ?? null]);
    return null;
  }
  await ctx.db.query('update wakeups set status = $2, updated_at = clock_timestamp() where id = $1', [ended.wakeup_id, WAKEUP_STATUS[end.status]]);
  const failed = end.status !== 'succeeded' && end.status !== 'cancelled';
  await ctx.db.query(
    `insert into agent_states (agent_id, company_id) values ($1, $2) on conflict do nothing`, [ended.agent_id, ended.company_id]);
  await ctx.db.query(
    `update agent_states set last_run_id = $2, last_run_status = $3, total_runs = total_runs + 1,
            succeeded_runs = succeeded_runs + ($3::text = 'succeeded')::int, failed_runs = failed_runs + ($4::boolean)::int,
            last_error = case when $4::boolean then $5 else last_error end, updated_at = clock_timestamp()
      where agent_id = $1`,
    [ended.agent_id, runId, end.status, failed, end.error ?? end.errorCode ?? (end.exitCode !== null && end.exitCode !== undefined ? `exit code ${end.exitCode}` : end.status)]);
  recordActivity(ctx, {
    action: 'run.finished', entityType: 'heartbeat_run', entityId: runId,
    details: { agentId: ended.agent_id, status: end.status, exitCode: end.exitCode ?? null, signal: end.signal ?? null, errorCode: end.errorCode ?? null, cancelReason: end.cancelReason ?? null },
  });
  await ctx.streams.publish(runChannel(runId), { event: 'status', status: end.status, exitCode: end.exitCode ?? null, signal: end.signal ?? null, errorCode: end.errorCode ?? null });
  return ended;
}
