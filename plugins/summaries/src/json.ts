import type { Row } from './context.ts';

const time = (value: unknown) => (value === null || value === undefined ? null : new Date(value as string).toISOString());
const opt = (value: unknown) => (value === undefined ? null : value);

export function slotJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, scopeKind: row.scope_kind, scopeId: opt(row.scope_id), slotKey: row.slot_key,
    documentId: opt(row.document_id), status: row.status, failureReason: opt(row.failure_reason), generatingIssueId: opt(row.generating_issue_id),
    lastGeneratedAt: time(row.last_generated_at), lastGeneratedByAgentId: opt(row.last_generated_by_agent_id), lastModel: opt(row.last_model),
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function documentJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, title: opt(row.title), format: row.format, body: row.body,
    latestRevisionId: opt(row.latest_revision_id), latestRevisionNumber: row.latest_revision_number,
    createdByAgentId: opt(row.created_by_agent_id), createdByUserId: null, updatedByAgentId: opt(row.updated_by_agent_id), updatedByUserId: null,
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function revisionJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, documentId: row.document_id, revisionNumber: row.revision_number, title: opt(row.title),
    format: row.format, body: row.body, changeSummary: opt(row.change_summary), createdByAgentId: opt(row.created_by_agent_id),
    createdByUserId: null, createdByRunId: opt(row.created_by_run_id), createdAt: time(row.created_at),
  };
}

/** A generation task as the work plugin's `task` service answers it. */
export interface Task { id: string; identifier: string; title: string; status: string; assigneeAgentId: string | null; checkoutRunId: string | null; executionRunId: string | null }

/** The in-flight task view of the slot routes. */
export function taskRef(task: Task) {
  return { id: task.id, identifier: task.identifier, title: task.title, status: task.status, assigneeAgentId: task.assigneeAgentId };
}
