import type { ExecutionSummary } from '@keel/sdk/plugin';
import type { Row } from './context.ts';

const iso = (value: unknown): string | null => (value === null || value === undefined ? null : new Date(value as string).toISOString());
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

/** A heartbeat run: its own facts from this plugin's row, its process's from the execution when there is one (process-facts.ts). */
export function runJson(row: Row, execution?: ExecutionSummary) {
  return {
    id: row.id,
    companyId: row.company_id,
    agentId: row.agent_id,
    wakeupId: row.wakeup_id,
    status: row.status,
    invocationSource: row.invocation_source,
    triggerDetail: row.trigger_detail,
    wakeReason: row.wake_reason ?? null,
    issueId: row.issue_id ?? null,
    projectId: row.project_id ?? null,
    taskKey: row.task_key,
    adapterType: row.adapter_type,
    executionId: row.execution_id ?? null,
    pid: execution ? execution.pid : num(row.pid),
    httpStatus: execution ? execution.httpStatus : num(row.http_status),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    exitCode: execution ? execution.exitCode : num(row.exit_code),
    signal: execution ? execution.signal : row.signal ?? null,
    errorCode: row.error_code ?? null,
    usageJson: row.usage_json ?? null,
    resultJson: row.result_json ?? null,
    logBytes: execution ? execution.logBytes : Number(row.log_bytes ?? 0),
    logSha256: execution ? execution.logSha256 : row.log_sha256 ?? null,
    sessionIdBefore: row.session_id_before ?? null,
    sessionIdAfter: row.session_id_after ?? null,
    cancelReason: row.cancel_reason ?? null,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export function wakeupJson(row: Row) {
  return {
    id: row.id,
    companyId: row.company_id,
    agentId: row.agent_id,
    source: row.source,
    triggerDetail: row.trigger_detail,
    reason: row.reason ?? null,
    payload: row.payload ?? {},
    issueId: row.issue_id ?? null,
    projectId: row.project_id ?? null,
    idempotencyKey: row.idempotency_key ?? null,
    forceFreshSession: row.force_fresh_session === true,
    status: row.status,
    runId: row.run_id ?? null,
    requestedBy: { type: row.requested_by_type, id: row.requested_by_id },
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export function agentStateJson(agentId: string, row: Row | undefined) {
  return {
    agentId,
    sessionId: row?.session_id ?? null,
    lastRunId: row?.last_run_id ?? null,
    lastRunStatus: row?.last_run_status ?? null,
    lastError: row?.last_error ?? null,
    totals: {
      runs: Number(row?.total_runs ?? 0), succeededRuns: Number(row?.succeeded_runs ?? 0), failedRuns: Number(row?.failed_runs ?? 0),
      inputTokens: Number(row?.input_tokens ?? 0), cachedInputTokens: Number(row?.cached_input_tokens ?? 0),
      outputTokens: Number(row?.output_tokens ?? 0), costCents: Number(row?.cost_cents ?? 0),
    },
    updatedAt: iso(row?.updated_at),
  };
}
