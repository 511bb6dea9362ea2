import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { after } from './artifact-query.ts';
import type { WorkContext } from './context.ts';
import { decodeCursor, encodeCursor, UUID_PATTERN } from './cursor.ts';
import { traceJson } from './feedback.ts';

const DEFAULT_LIMIT = 50;
const UUID = new RegExp(`^${UUID_PATTERN}$`, 'i');
/** Exact-match filters: query parameter -> column. */
const FILTERS = { targetType: 'target_type', vote: 'vote', status: 'status' } as const;
/** Every column but the payload, which a page of 200 traces would carry 13 MB of: selected only when asked for. */
const COLUMNS = `id, company_id, issue_id, issue_identifier, project_id, target_type, target_id, author_agent_id, run_id, voter_user_id,
  vote, reason, shareable, status, delivery_attempts, last_delivery_error, sent_at, created_at, updated_at, (extract(epoch from created_at) * 1000000)::bigint::text as cursor_micros`;

/** A `from`/`to` bound in milliseconds since the epoch (the schema checked the date-time's form), bound as a number so that any year the form allows is a time PostgreSQL can compare. */
function instant(value: unknown, field: string): number | null {
  if (typeof value !== 'string') return null;
  const ms = new Date(value).getTime();
  if (Number.isNaN(ms)) throw new PluginError(400, 'validation_failed', `${field} is not a valid date-time`, { field });
  return ms;
}

/**
 * `GET /api/companies/{companyId}/feedback-traces` (board only): the company's feedback traces,
 * newest vote first, filtered by target type, vote, status, issue (uuid or identifier, as the
 * trace recorded it), project (the issue's when the vote was cast), creation time (`from`
 * inclusive, `to` exclusive) and sharing; `{traces, nextCursor}` with an opaque cursor.
 */
export async function listFeedbackTraces(req: RouteRequest, ctx: WorkContext) {
  const query = req.query;
  const params: unknown[] = [req.companyId];
  const where = ['company_id = $1'];
  const equal = (column: string, value: unknown) => {
    params.push(value);
    where.push(`${column} = $${params.length}`);
  };
  for (const [field, column] of Object.entries(FILTERS)) {
    if (typeof query[field] === 'string') equal(column, query[field]);
  }
  if (typeof query.issueId === 'string') {
    if (UUID.test(query.issueId)) equal('issue_id', query.issueId.toLowerCase());
    else equal('issue_identifier', query.issueId.toUpperCase());
  }
  if (typeof query.projectId === 'string') equal('project_id', query.projectId.toLowerCase());
  if (query.sharedOnly === true) where.push('shareable');
  const from = instant(query.from, 'from');
  const to = instant(query.to, 'to');
  if (from !== null && to !== null && from > to) throw new PluginError(400, 'invalid_range', 'from must not be after to');
  const at = (ms: number) => {
    params.push(ms);
    return `'epoch'::timestamptz + $${params.length}::bigint * interval '1 millisecond'`;
  };
  if (from !== null) where.push(`created_at >= ${at(from)}`);
  if (to !== null) where.push(`created_at < ${at(to)}`);
  if (typeof query.cursor === 'string') where.push(after('created_at', 'id', decodeCursor(query.cursor), params));
  const includePayload = query.includePayload === true;
  const limit = typeof query.limit === 'number' ? query.limit : DEFAULT_LIMIT;
  params.push(limit + 1);
  const { rows } = await ctx.db.query(
    `select ${COLUMNS}${includePayload ? ', payload' : ''} from feedback_traces where ${where.join(' and ')}
      order by created_at desc, id desc limit $${params.length}`, params);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const nextCursor = rows.length > limit && last ? encodeCursor({ createdAt: String(last.cursor_micros), id: String(last.id) }) : null;
  return { traces: page.map((row) => traceJson(row, includePayload)), nextCursor };
}
