/** Rows of the plugin's tables as the API shows them. */
type Row = Record<string, unknown>;

export const time = (value: unknown): string | null => (value === null || value === undefined ? null : new Date(value as string).toISOString());

export function environmentJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, name: row.name, description: row.description ?? null, driver: row.driver,
    status: row.status, config: row.config ?? {}, envVars: row.env_vars ?? {}, maxConcurrentLeases: Number(row.max_concurrent_leases),
    metadata: row.metadata ?? null, createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function leaseJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, environmentId: row.environment_id, policy: row.policy, reuseKey: row.reuse_key ?? null,
    path: row.path, status: row.status, runId: row.run_id ?? null, issueId: row.issue_id ?? null,
    executionWorkspaceId: row.execution_workspace_id ?? null, acquiredAt: time(row.acquired_at), releasedAt: time(row.released_at),
    releaseReason: row.release_reason ?? null,
  };
}

export function executionWorkspaceJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, projectId: row.project_id, projectWorkspaceId: row.project_workspace_id,
    environmentId: row.environment_id ?? null, sourceIssueId: row.source_issue_id ?? null, name: row.name, mode: row.mode,
    status: row.status, cwd: row.cwd ?? null, repoUrl: row.repo_url ?? null, baseRef: row.base_ref ?? null, branch: row.branch ?? null,
    metadata: row.metadata ?? null, runtimeServices: row.runtime_services ?? [], workspaceCommands: row.workspace_commands ?? [],
    closedAt: time(row.closed_at), createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function operationJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, executionWorkspaceId: row.execution_workspace_id, kind: row.kind, action: row.action ?? null,
    status: row.status, message: row.message ?? null, details: row.details ?? null, actorType: row.actor_type ?? null,
    actorId: row.actor_id ?? null, executionId: row.execution_id ?? null, createdAt: time(row.created_at), finishedAt: time(row.finished_at),
  };
}
