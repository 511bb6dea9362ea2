import { iso, type Queryable } from '../db/database.ts';

/**
 * Approval records. The kernel writes the `hire_agent` approval when a company requires board
 * approval for new agents, and closes it when the agent is approved or terminated; a
 * general approvals surface can build on the same table.
 */
export interface ApprovalRow {
  id: string;
  company_id: string;
  type: string;
  status: string;
  requested_by_agent_id: string | null;
  requested_by_user_id: string | null;
  subject_agent_id: string | null;
  payload: Record<string, unknown>;
  decision_note: string | null;
  decided_by_user_id: string | null;
  decided_at: string | null;
  created_at: string;
  updated_at: string;
}

export const HIRE_APPROVAL = 'hire_agent';

export function toApprovalJson(row: ApprovalRow): Record<string, unknown> {
  return {
    id: row.id,
    companyId: row.company_id,
    type: row.type,
    status: row.status,
    requestedByAgentId: row.requested_by_agent_id,
    requestedByUserId: row.requested_by_user_id,
    subjectAgentId: row.subject_agent_id,
    payload: row.payload ?? {},
    decisionNote: row.decision_note,
    decidedByUserId: row.decided_by_user_id,
    decidedAt: iso(row.decided_at),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export async function createHireApproval(db: Queryable, input: {
  companyId: string;
  agentId: string;
  payload: Record<string, unknown>;
  requestedByUserId: string | null;
  requestedByAgentId: string | null;
}): Promise<ApprovalRow> {
  const rows = await db.query<ApprovalRow>(
    `insert into approvals (company_id, type, status, requested_by_agent_id, requested_by_user_id, subject_agent_id, payload)
     values (?, ?, 'pending', ?, ?, ?, ?::jsonb) returning *`,
    [input.companyId, HIRE_APPROVAL, input.requestedByAgentId, input.requestedByUserId, input.agentId, JSON.stringify(input.payload)],
  );
  return rows[0]!;
}

/** Closes the agent's pending hire approvals with the given outcome; returns the closed rows. */
export async function decidePendingHire(db: Queryable, agentId: string, status: 'approved' | 'cancelled', decidedByUserId: string | null, note?: string): Promise<ApprovalRow[]> {
  return db.query<ApprovalRow>(
    `update approvals set status = ?, decided_by_user_id = ?, decided_at = now(), updated_at = now(),
            decision_note = coalesce(?, decision_note)
      where subject_agent_id = ? and type = ? and status = 'pending'
      returning *`,
    [status, decidedByUserId, note ?? null, agentId, HIRE_APPROVAL],
  );
}
