/** Rows of the plugin's tables as the API shows them. */
type Row = Record<string, unknown>;

export const time = (value: unknown): string | null => (value === null || value === undefined ? null : new Date(value as string).toISOString());
const day = (value: unknown): string | null => {
  if (value === null || value === undefined) return null;
  // A date column arrives as a Date at local midnight or as text: the calendar day either way.
  if (value instanceof Date) return `${value.getFullYear()}-${String(value.getMonth() + 1).padStart(2, '0')}-${String(value.getDate()).padStart(2, '0')}`;
  return String(value).slice(0, 10);
};

export function goalJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, title: row.title, description: row.description ?? null, level: row.level, status: row.status,
    parentId: row.parent_id ?? null, ownerAgentId: row.owner_agent_id ?? null, createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function projectJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, name: row.name, description: row.description ?? null, status: row.status,
    leadAgentId: row.lead_agent_id ?? null, goalId: row.goal_id ?? null, targetDate: day(row.target_date), color: row.color ?? null,
    pausedAt: time(row.paused_at), pauseReason: row.pause_reason ?? null,
    managedBy: row.managed_by_plugin ? { plugin: row.managed_by_plugin, key: row.managed_key } : null,
    archivedAt: time(row.archived_at), createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function issueJson(row: Row, blockedByIssueIds: string[] = []) {
  return {
    id: row.id, companyId: row.company_id, identifier: row.identifier, issueNumber: Number(row.issue_number), title: row.title,
    description: row.description ?? null, status: row.status, priority: row.priority, projectId: row.project_id ?? null,
    goalId: row.goal_id ?? null, parentId: row.parent_id ?? null, assigneeAgentId: row.assignee_agent_id ?? null,
    assigneeUserId: row.assignee_user_id ?? null, checkoutRunId: row.checkout_run_id ?? null, executionRunId: row.execution_run_id ?? null,
    createdByAgentId: row.created_by_agent_id ?? null, createdByUserId: row.created_by_user_id ?? null, originKind: row.origin_kind,
    originId: row.origin_id ?? null, billingCode: row.billing_code ?? null, blockedByIssueIds, hiddenAt: time(row.hidden_at),
    startedAt: time(row.started_at), completedAt: time(row.completed_at), cancelledAt: time(row.cancelled_at),
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function commentJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, issueId: row.issue_id, authorType: row.author_type, authorAgentId: row.author_agent_id ?? null,
    authorUserId: row.author_user_id ?? null, runId: row.run_id ?? null, parentCommentId: row.parent_comment_id ?? null, body: row.body,
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

/** The run working on an issue while it is checked out, as the ledger knows it (status null: a run the ledger does not know). */
export interface ActiveRun { runId: string; status: string | null; agentId: string | null; startedAt: string | null }

/**
 * An inbox item (compact): what an agent needs to pick its next issue. `row.open_blockers` are
 * the ids of the blockers that are neither done nor cancelled.
 */
export function inboxItemJson(row: Row, activeRun: ActiveRun | null) {
  const open = (row.open_blockers as string[] | null) ?? [];
  return {
    id: row.id, identifier: row.identifier, title: row.title, status: row.status, priority: row.priority, projectId: row.project_id ?? null,
    goalId: row.goal_id ?? null, parentId: row.parent_id ?? null, updatedAt: time(row.updated_at), activeRun,
    dependencyReady: open.length === 0, unresolvedBlockerCount: open.length, unresolvedBlockerIssueIds: open,
  };
}

/** An issue in a short list (the issues a run touched). */
export function issueSummaryJson(row: Row) {
  return {
    id: row.id, identifier: row.identifier, title: row.title, status: row.status, priority: row.priority, projectId: row.project_id ?? null,
    goalId: row.goal_id ?? null, parentId: row.parent_id ?? null, assigneeAgentId: row.assignee_agent_id ?? null, updatedAt: time(row.updated_at),
  };
}
