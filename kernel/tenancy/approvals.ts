import { APPROVAL_STATUSES, type ApprovalStatus } from '../../sdk/capabilities/kernel-data.ts';
import { iso, type Queryable, type Tx } from '../db/database.ts';
import { notFound } from '../http/errors.ts';
import { isUuid } from '../http/validate.ts';

/**
 * Approval records: what the board is asked to decide. The hire flow writes `hire_agent`
 * approvals for companies that require board approval of new agents; the board decides them
 * (approval-routes.ts), and terminating the agent cancels them. An open hire approval always
 * has its agent waiting in `pending_approval`.
 */
export interface ApprovalRow {
  id: string;
  company_id: string;
  type: string;
  status: ApprovalStatus;
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

export { APPROVAL_STATUSES, type ApprovalStatus };
export const HIRE_APPROVAL = 'hire_agent';

/** Statuses the board can still decide: a revision request sends an approval back, it does not close it. */
export const OPEN_APPROVAL_STATUSES: readonly ApprovalStatus[] = ['pending', 'revision_requested'];
export const isOpen = (status: string) => (OPEN_APPROVAL_STATUSES as readonly string[]).includes(status);

/** The configuration of the agent a hire asks for, which callers who may not read agent configuration do not see. */
const CONFIG_KEYS = ['adapterConfig', 'runtimeConfig'];

/**
 * The approval as the API shows it. A hire's payload holds the requested configuration,
 * already masked; `redacted` empties it for callers that may not read agent configuration
 * at all (agents without agents:create, plugins), and `configRedacted` says so.
 */
export function toApprovalJson(row: ApprovalRow, options: { redacted?: boolean } = {}): Record<string, unknown> {
  let payload = row.payload ?? {};
  const redact = options.redacted === true && CONFIG_KEYS.some((key) => key in payload);
  if (redact) payload = { ...payload, ...Object.fromEntries(CONFIG_KEYS.filter((key) => key in payload).map((key) => [key, {}])) };
  return {
    id: row.id,
    companyId: row.company_id,
    type: row.type,
    status: row.status,
    requestedByAgentId: row.requested_by_agent_id,
    requestedByUserId: row.requested_by_user_id,
    subjectAgentId: row.subject_agent_id,
    payload,
    ...(redact ? { configRedacted: true } : {}),
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

/** One approval by id; an id that is not a uuid names nothing. */
export async function findApproval(db: Queryable, approvalId: string): Promise<ApprovalRow | undefined> {
  if (!isUuid(approvalId)) return undefined;
  return db.maybeOne<ApprovalRow>('select * from approvals where id = ?', [approvalId.toLowerCase()]);
}

/**
 * Locks an approval for the rest of the transaction: decisions of one approval are serialised,
 * and the second of two concurrent decisions sees the first one's outcome.
 */
export async function lockApproval(tx: Tx, approvalId: string): Promise<ApprovalRow> {
  const row = await tx.maybeOne<ApprovalRow>('select * from approvals where id = ? for update', [approvalId]);
  if (!row) throw notFound('Approval not found');
  return row;
}

/**
 * Locks the open hire approvals of an agent. Every path that closes them (approve, terminate,
 * a decision) locks them before the agent's row, so no two of those paths wait on each other.
 */
export async function lockOpenHires(tx: Tx, agentId: string): Promise<ApprovalRow[]> {
  return tx.query<ApprovalRow>(
    'select * from approvals where subject_agent_id = ? and type = ? and status in (?, ?) order by id for update',
    [agentId, HIRE_APPROVAL, ...OPEN_APPROVAL_STATUSES],
  );
}

export interface ApprovalFilter { status?: ApprovalStatus; type?: string }

/** How many approvals one list answers: the API's `limit` and ctx.approvals.list's. */
export const APPROVAL_LIST_LIMIT = { default: 100, max: 500 } as const;

function filterClause(companyId: string, filter: ApprovalFilter): { where: string; params: unknown[] } {
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (filter.status !== undefined) { where.push('status = ?'); params.push(filter.status); }
  if (filter.type !== undefined) { where.push('type = ?'); params.push(filter.type); }
  return { where: where.join(' and '), params };
}

/** The company's approvals, newest first. */
export async function listApprovals(db: Queryable, companyId: string, filter: ApprovalFilter & { limit: number }): Promise<ApprovalRow[]> {
  const { where, params } = filterClause(companyId, filter);
  return db.query<ApprovalRow>(`select * from approvals where ${where} order by created_at desc, id desc limit ?`, [...params, filter.limit]);
}

export async function countApprovals(db: Queryable, companyId: string, filter: ApprovalFilter): Promise<number> {
  const { where, params } = filterClause(companyId, filter);
  const row = await db.maybeOne<{ n: number }>(`select count(*)::int as n from approvals where ${where}`, params);
  return row?.n ?? 0;
}
