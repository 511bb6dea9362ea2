import { int, iso, type Queryable, type Row } from '../db/database.ts';
import { COMPANY_WITH_SPEND } from './month-spend.ts';
import { insertWithUniquePrefix } from './issue-prefix.ts';

/** The company resource as the API returns it, declared in the SDK with the events that carry it. */
import type { Company } from '../../sdk/shared/principal-json.ts';
export type { Company, FeedbackSharingConsent } from '../../sdk/shared/principal-json.ts';

export const COMPANY_STATUSES = ['active', 'paused', 'archived'] as const;
export type CompanyStatus = (typeof COMPANY_STATUSES)[number];

export function assetContentPath(assetId: string): string {
  return `/api/assets/${assetId}/content`;
}

export function toCompany(row: Row): Company {
  return {
    id: row.id,
    name: row.name,
    description: row.description ?? null,
    status: row.status,
    pauseReason: row.status === 'paused' ? row.pause_reason ?? null : null,
    pausedAt: row.status === 'paused' ? iso(row.paused_at) : null,
    issuePrefix: row.issue_prefix,
    issueCounter: int(row.issue_counter),
    budgetMonthlyCents: int(row.budget_monthly_cents),
    // Read with the row (COMPANY_WITH_SPEND, month-spend.ts): the costs plugin's figure.
    spentMonthlyCents: int(row.spent_monthly_cents),
    requireBoardApprovalForNewAgents: row.require_board_approval_for_new_agents === true,
    brandColor: row.brand_color ?? null,
    logoAssetId: row.logo_asset_id ?? null,
    logoUrl: row.logo_asset_id ? assetContentPath(row.logo_asset_id) : null,
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    ...(typeof row.feedback_data_sharing_enabled === 'boolean' ? {
      feedbackDataSharingEnabled: row.feedback_data_sharing_enabled,
      feedbackDataSharingConsentAt: iso(row.feedback_data_sharing_consent_at)!,
      feedbackDataSharingConsentByUserId: row.feedback_data_sharing_consent_by_user_id,
      feedbackDataSharingTermsVersion: row.feedback_data_sharing_terms_version ?? null,
    } : {}),
  };
}

/** API field -> column, for every field a patch may write. */
export const COMPANY_COLUMNS = {
  name: 'name',
  description: 'description',
  budgetMonthlyCents: 'budget_monthly_cents',
  status: 'status',
  brandColor: 'brand_color',
  logoAssetId: 'logo_asset_id',
  requireBoardApprovalForNewAgents: 'require_board_approval_for_new_agents',
  feedbackDataSharingEnabled: 'feedback_data_sharing_enabled',
  feedbackDataSharingTermsVersion: 'feedback_data_sharing_terms_version',
} as const;
export type CompanyField = keyof typeof COMPANY_COLUMNS;

export async function findCompany(db: Queryable, id: string): Promise<Row | undefined> {
  return db.maybeOne(`select ${COMPANY_WITH_SPEND} from companies where id = ?`, [id]);
}

/** Reads the company under a row lock, so that concurrent patches, archives and deletes serialise. */
export async function lockCompany(db: Queryable, id: string, strength: 'no key update' | 'update' = 'no key update'): Promise<Row | undefined> {
  // A change of the row's other columns takes FOR NO KEY UPDATE, as PostgreSQL's own UPDATE of
  // them does: it leaves the key-share locks of inserts that reference the company (runs,
  // activity, executions) free. FOR UPDATE would make such an insert, made by a transaction that
  // holds one of the company's agents, wait for the archive that waits for that agent: a
  // deadlock. Only the delete takes FOR UPDATE.
  return db.maybeOne(`select ${COMPANY_WITH_SPEND} from companies where id = ? for ${strength}`, [id]);
}

/**
 * Companies in name order (case-insensitive, then creation time), so that listings are
 * stable for people scanning them. `ids` null means every company (local board, instance
 * admin); otherwise only those ids.
 */
export async function listCompanies(db: Queryable, options: { ids: readonly string[] | null; includeArchived: boolean }): Promise<Row[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (options.ids !== null) {
    if (options.ids.length === 0) return [];
    where.push('id in (select jsonb_array_elements_text(?::jsonb)::uuid)');
    params.push(JSON.stringify(options.ids));
  }
  if (!options.includeArchived) where.push("status <> 'archived'");
  const filter = where.length ? `where ${where.join(' and ')}` : '';
  return db.query(`select ${COMPANY_WITH_SPEND} from companies ${filter} order by lower(name), created_at, id`, params);
}

export interface CompanyStats { agentCount: number; issueCount: number }

/**
 * Per-company counts for every reachable company (archived ones included, since the ids
 * come from the caller's reach, not from a listing). Issues live in the work plugin, which
 * numbers each from the company's issue counter (issues.number, committed as it is taken) and
 * never deletes one, so the counter is the number of the company's issues, but for the rare
 * create that failed after taking its number.
 */
export async function companyStats(db: Queryable, ids: readonly string[] | null): Promise<Record<string, CompanyStats>> {
  if (ids !== null && ids.length === 0) return {};
  const filter = ids === null ? '' : 'where c.id in (select jsonb_array_elements_text(?::jsonb)::uuid)';
  const rows = await db.query<{ id: string; issue_counter: number; agent_count: string }>(
    `select c.id, c.issue_counter, count(a.id) as agent_count
       from companies c left join agents a on a.company_id = c.id and a.status <> 'terminated'
       ${filter}
      group by c.id, c.issue_counter`, ids === null ? [] : [JSON.stringify(ids)]);
  const stats: Record<string, CompanyStats> = {};
  for (const row of rows) stats[row.id] = { agentCount: int(row.agent_count), issueCount: int(row.issue_counter) };
  return stats;
}

export interface NewCompany {
  name: string;
  description: string | null;
  budgetMonthlyCents: number;
  requireBoardApprovalForNewAgents: boolean;
  brandColor: string | null;
}

export async function insertCompany(db: Queryable, input: NewCompany): Promise<Row> {
  return insertWithUniquePrefix(db, input.name, (prefix) => db.maybeOne(
    `insert into companies (name, description, issue_prefix, budget_monthly_cents, require_board_approval_for_new_agents, brand_color)
     values (?, ?, ?, ?, ?, ?)
     on conflict (issue_prefix) do nothing
     returning ${COMPANY_WITH_SPEND}`,
    [input.name, input.description, prefix, input.budgetMonthlyCents, input.requireBoardApprovalForNewAgents, input.brandColor]));
}

export async function addMembership(db: Queryable, companyId: string, userId: string, role: string): Promise<void> {
  await db.exec(
    `insert into company_memberships (company_id, principal_type, principal_id, role, status)
     values (?, 'user', ?, ?, 'active')
     on conflict (company_id, principal_type, principal_id) do update set role = excluded.role, status = 'active', updated_at = now()`,
    [companyId, userId, role]);
}

/** A column assignment: a bound value, or a fixed SQL expression such as `now()`. */
export type Assignment = { value: unknown } | { sql: 'now()' | 'null' };

/** Writes the given columns (names come from COMPANY_COLUMNS or the lifecycle code, never from input). */
export async function updateCompanyColumns(db: Queryable, id: string, columns: Record<string, Assignment>): Promise<Row> {
  const sets: string[] = [];
  const params: unknown[] = [];
  for (const [column, assignment] of Object.entries(columns)) {
    if ('sql' in assignment) sets.push(`${column} = ${assignment.sql}`);
    else { sets.push(`${column} = ?`); params.push(assignment.value); }
  }
  sets.push('updated_at = now()');
  const row = await db.maybeOne(`update companies set ${sets.join(', ')} where id = ? returning ${COMPANY_WITH_SPEND}`, [...params, id]);
  if (!row) throw new Error(`company ${id} vanished during update`);
  return row;
}
