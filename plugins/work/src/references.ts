import { PluginError } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { list } from './sql.ts';

/**
 * A body may name other rows (a goal, a project, a parent or blocking issue, an agent): each
 * must exist in the call's company. Another company's row answers exactly like an unknown one,
 * 422 naming the field, so a caller learns nothing about other companies.
 */
const TABLES = { goal: 'goals', project: 'projects', issue: 'issues' } as const;

export async function assertRowOfCompany(ctx: WorkContext, companyId: string, kind: keyof typeof TABLES, field: string, id: unknown): Promise<void> {
  if (id === undefined || id === null) return;
  const { rows } = await ctx.db.query(`select 1 from ${TABLES[kind]} where id = $1 and company_id = $2`, [id, companyId]);
  if (rows.length === 0) throw new PluginError(422, `${kind}_not_found`, `${field}: no ${kind} with this id belongs to the company`, { field });
}

export async function assertAgentOfCompany(ctx: WorkContext, field: string, id: unknown): Promise<void> {
  if (id === undefined || id === null) return;
  // ctx.agents.get answers null for an unknown id and another company's agent alike.
  if (!(await ctx.agents.get(String(id)))) throw new PluginError(422, 'agent_not_found', `${field}: no agent with this id belongs to the company`, { field });
}

/** Every id must name an issue of the company; answers them without duplicates. */
export async function assertIssuesOfCompany(ctx: WorkContext, companyId: string, field: string, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids.map((id) => id.toLowerCase()))];
  if (unique.length === 0) return [];
  const { rows } = await ctx.db.query(`select id from issues where company_id = $1 and id = any(${list(2, 'uuid')})`, [companyId, unique]);
  if (rows.length !== unique.length) {
    const found = new Set(rows.map((row) => String(row.id)));
    throw new PluginError(422, 'issue_not_found', `${field}: no issue with id ${unique.find((id) => !found.has(id))} belongs to the company`, { field });
  }
  return unique;
}

/**
 * A row may not be placed under itself or one of its descendants: walks up from the new parent
 * and refuses when the row is among its ancestors (422 `<kind>_cycle` naming parentId).
 */
export async function assertNotUnderItself(ctx: WorkContext, kind: 'goal' | 'issue', id: string, parentId: unknown, message: string): Promise<void> {
  if (!parentId) return;
  const table = TABLES[kind];
  const { rows } = await ctx.db.query(
    `with recursive up(id, parent_id) as (select id, parent_id from ${table} where id = $1
       union all select t.id, t.parent_id from ${table} t join up on t.id = up.parent_id)
     select 1 from up where id = $2 limit 1`, [parentId, id]);
  if (rows.length) throw new PluginError(422, `${kind}_cycle`, `parentId: ${message}`, { field: 'parentId' });
}
