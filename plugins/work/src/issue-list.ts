import { respond, type RouteRequest } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { issueJson } from './json.ts';
import { list, readLimit } from './sql.ts';

const DEFAULT_LIMIT = 50;
/** Exact-match filters: query parameter -> column. */
const FILTERS = { assigneeAgentId: 'assignee_agent_id', assigneeUserId: 'assignee_user_id', projectId: 'project_id', parentId: 'parent_id', goalId: 'goal_id' } as const;

/**
 * A company's issues, newest first, without hidden ones. Filters: `status` (one or several,
 * comma-separated), assignee, project, parent, goal, and `q` (title, identifier or description,
 * case-insensitive). Pages of `limit` (default 50); the next page's opaque cursor is in the
 * `X-Next-Cursor` header, absent on the last page.
 */
export async function listIssues(req: RouteRequest, ctx: WorkContext) {
  const query = req.query;
  const params: unknown[] = [req.companyId];
  const where = ['company_id = $1', 'hidden_at is null'];
  if (typeof query.status === 'string') {
    const statuses = query.status.split(',').map((s) => s.trim()).filter(Boolean);
    // One status is an equality, which the (…, status, created_at desc, id desc) indexes answer in page order.
    params.push(statuses.length === 1 ? statuses[0] : statuses);
    where.push(statuses.length === 1 ? `status = $${params.length}` : `status = any(${list(params.length, 'text')})`);
  }
  for (const [field, column] of Object.entries(FILTERS)) {
    if (query[field] === undefined) continue;
    params.push(query[field]);
    where.push(`${column} = $${params.length}`);
  }
  if (typeof query.q === 'string' && query.q.trim()) {
    params.push(`%${query.q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    where.push(`(title ilike $${params.length} or identifier ilike $${params.length} or description ilike $${params.length})`);
  }
  if (typeof query.cursor === 'string') {
    const after = decodeCursor(query.cursor);
    params.push(after.createdAt, after.id);
    where.push(`(created_at, id) < ('epoch'::timestamptz + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length}::uuid)`);
  }
  const limit = typeof query.limit === 'number' ? query.limit : DEFAULT_LIMIT;
  const { rows } = await ctx.db.query(
    `select i.*, (extract(epoch from created_at) * 1000000)::bigint::text as cursor_micros,
            coalesce((select array_agg(b.blocker_id::text order by b.created_at, b.blocker_id) from issue_blockers b where b.issue_id = i.id), '{}') as blockers
       from issues i where ${where.join(' and ')} order by created_at desc, id desc limit ${readLimit(limit + 1)}`, params);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const headers: Record<string, string> = rows.length > limit && last ? { 'x-next-cursor': encodeCursor({ createdAt: String(last.cursor_micros), id: String(last.id) }) } : {};
  return respond(200, page.map((row) => issueJson(row, row.blockers as string[])), headers);
}
