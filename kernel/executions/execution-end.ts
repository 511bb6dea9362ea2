import type { ExecutionStatus } from '../../sdk/events/execution-events.ts';
import type { ActivityLog } from '../activity/activity-log.ts';
import { retryWhileDatabaseUnavailable } from '../db/connection-errors.ts';
import { int, type Database, type Row, type Tx } from '../db/database.ts';
import type { EventBus } from '../events/event-bus.ts';
import { LIVE_STATUSES, type RunLedger } from '../runs/run-ledger.ts';
import type { AnyExecutionRef, ExecutionLog } from './execution-log.ts';
import { FINISH_EXECUTION, LEASE_SEC, LIVE, type Finish, type Live } from './execution-rows.ts';

/** What ending an execution writes to: its row, the run ledger, the plugin's event and the activity log. */
export interface EndDeps { db: Database; runs: RunLedger; events: EventBus; activity: ActivityLog }

/** The terminal row, the run's close and execution.finished, in one transaction; only while this process still owns it. */
export async function recordExecutionEnd(deps: EndDeps, instanceId: string, entry: Live<AnyExecutionRef>, outcome: Partial<Finish>, log: ExecutionLog): Promise<void> {
  const written = await log.close();
  const status: ExecutionStatus = entry.cancelReason === 'server_stopped' ? 'lost'
    : entry.cancelReason ? 'cancelled'
      : entry.timedOut ? 'timed_out'
        : outcome.failed === false ? 'succeeded' : 'failed';
  const errorCode = status === 'cancelled' || status === 'lost' ? entry.cancelReason : status === 'timed_out' ? 'timeout' : outcome.errorCode ?? null;
  // An execution that ends while the database fails over is recorded once the new primary serves
  // (its entry stays live meanwhile, so the heartbeat keeps its lease); the update is conditional,
  // so a repeat after a commit whose answer was lost changes nothing.
  await retryWhileDatabaseUnavailable(() => deps.db.transaction(async (tx) => {
    const row = await tx.maybeOne<Row>(FINISH_EXECUTION, [status, outcome.exitCode ?? null, outcome.signal ?? null, outcome.httpStatus ?? null, errorCode,
        outcome.response === undefined || outcome.response === null ? null : JSON.stringify(log.mask.value(outcome.response)),
        written.bytes, written.sha256, entry.ref.executionId, instanceId]);
    if (row) await closeExecutionRun(deps, tx, row, status === 'lost' ? 'failed' : status, errorCode, entry.attempts);
  }), LEASE_SEC * 1000);
}

/** The run's close (a workspace process has none), `execution.finished` for the starting plugin and the activity entry. */
export async function closeExecutionRun(deps: EndDeps, tx: Tx, row: Row, runStatus: 'succeeded' | 'failed' | 'cancelled' | 'timed_out', reason: string | null, attempts?: number): Promise<void> {
  // A workspace process has no run to close; the rest (event, activity) is the same.
  const live = row.run_id ? await tx.maybeOne<Row>(`select status from runs where id = ? for update`, [row.run_id]) : null;
  if (live && LIVE_STATUSES.has(live.status)) {
    await deps.runs.close(tx, row.run_id, { status: runStatus, reason: reason ?? `execution ${row.status}` });
  }
  await deps.events.appendTo(tx, 'execution.finished', {
    executionId: row.id, runId: row.run_id, companyId: row.company_id, agentId: row.agent_id, status: row.status,
    exitCode: row.exit_code ?? null, signal: row.signal ?? null, httpStatus: row.http_status ?? null, errorCode: row.error_code ?? null,
    logBytes: int(row.log_bytes), response: row.response ?? null, ...(attempts ? { attempts } : {}),
  }, row.plugin);
  await deps.activity.record(tx, {
    companyId: row.company_id, actorType: 'system', actorId: 'executor', agentId: row.agent_id, runId: row.run_id,
    action: 'execution.finished', entityType: 'execution', entityId: row.id, details: { status: row.status, errorCode: row.error_code ?? null, plugin: row.plugin },
  });
}
