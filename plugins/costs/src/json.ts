/** Rows of the plugin's tables as the API shows them. bigint columns arrive as text. */
type Row = Record<string, unknown>;

const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const time = (value: unknown): string | null => (value === null || value === undefined ? null : new Date(value as string).toISOString());

export function costEventJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, agentId: row.agent_id,
    issueId: row.issue_id ?? null, projectId: row.project_id ?? null, goalId: row.goal_id ?? null, heartbeatRunId: row.heartbeat_run_id ?? null,
    billingCode: row.billing_code ?? null, provider: row.provider, biller: row.biller, billingType: row.billing_type, model: row.model, source: row.source,
    inputTokens: num(row.input_tokens), cachedInputTokens: num(row.cached_input_tokens), outputTokens: num(row.output_tokens),
    costCents: Number(row.cost_cents), occurredAt: time(row.occurred_at), createdAt: time(row.created_at),
  };
}

/** A policy row with its budget as `budget` (policies.ts, POLICY_ROW): a company's or agent's monthly policy stores none itself. */
export function policyJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, scopeType: row.scope_type, scopeId: row.scope_id, metric: row.metric,
    windowKind: row.window_kind, amount: Number(row.budget ?? row.amount), warnPercent: Number(row.warn_percent),
    hardStopEnabled: row.hard_stop_enabled, notifyEnabled: row.notify_enabled, isActive: row.is_active,
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function incidentJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, policyId: row.policy_id, scopeType: row.scope_type, scopeId: row.scope_id,
    metric: row.metric, windowKind: row.window_kind, windowStart: row.window_kind === 'lifetime' ? null : time(row.window_start),
    windowEnd: time(row.window_end), thresholdType: row.threshold_type, amountLimit: Number(row.amount_limit),
    amountObserved: Number(row.amount_observed), status: row.status, resolution: row.resolution ?? null,
    resolutionNote: row.resolution_note ?? null, createdAt: time(row.created_at), resolvedAt: time(row.resolved_at),
  };
}

export function financeEventJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, kind: row.kind, direction: row.direction, amountCents: Number(row.amount_cents),
    currency: row.currency, estimated: row.estimated, biller: row.biller ?? null, description: row.description ?? null,
    metadata: row.metadata ?? null, occurredAt: time(row.occurred_at), createdAt: time(row.created_at),
  };
}
