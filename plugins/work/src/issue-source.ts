import type { WorkContext } from './context.ts';

type Row = Record<string, unknown>;
const iso = (value: unknown) => new Date(value as string).toISOString();
/** At most this many documents and comments are read per issue: a source is capped far below what they could hold. */
const MAX_DOCUMENTS = 50;
const MAX_COMMENTS = 500;

/**
 * The `issue-source` service: an issue of the calling company as material for a knowledge base
 * (title, status, description, its documents' latest bodies, its comments oldest first). Texts
 * are taken in that order until `maxCharacters` is spent; what does not fit is left out and
 * `truncated` says so, so the answer stays small whatever the issue holds. `issue` is null when
 * the company has no such issue. Deleted comments are left out.
 */
export async function issueSourceService(input: unknown, ctx: WorkContext) {
  const { issueId, maxCharacters } = input as { issueId: string; maxCharacters: number };
  const companyId = ctx.invocation.companyId;
  const { rows } = await ctx.db.query('select * from issues where id = $1 and company_id = $2', [issueId, companyId]);
  const issue = rows[0];
  if (!issue) return { issue: null };
  let budget = maxCharacters;
  let truncated = false;
  /** A text cut to what is left of the budget; null once nothing is left. */
  const take = (text: string): string | null => {
    if (budget <= 0) { truncated = true; return null; }
    const kept = text.length > budget ? text.slice(0, budget) : text;
    if (kept.length < text.length) truncated = true;
    budget -= kept.length;
    return kept;
  };
  const description = take(String(issue.description ?? '')) ?? '';
  const documents: Row[] = [];
  const docs = await ctx.db.query(
    `select key, title, latest_body, latest_revision_number, updated_at from issue_documents
      where issue_id = $1 and company_id = $2 order by created_at, key limit $3`, [issueId, companyId, MAX_DOCUMENTS + 1]);
  if (docs.rows.length > MAX_DOCUMENTS) truncated = true;
  for (const doc of docs.rows.slice(0, MAX_DOCUMENTS)) {
    const body = take(String(doc.latest_body));
    if (body === null) break;
    documents.push({ key: String(doc.key), title: (doc.title as string | null) ?? null, body, revisionNumber: Number(doc.latest_revision_number), updatedAt: iso(doc.updated_at) });
  }
  const comments: Row[] = [];
  if (budget > 0) {
    const found = await ctx.db.query(
      `select id, author_type, author_agent_id, author_user_id, body, created_at from issue_comments
        where issue_id = $1 and company_id = $2 and deleted_at is null order by created_at, id limit $3`, [issueId, companyId, MAX_COMMENTS + 1]);
    if (found.rows.length > MAX_COMMENTS) truncated = true;
    for (const comment of found.rows.slice(0, MAX_COMMENTS)) {
      const body = take(String(comment.body));
      if (body === null) break;
      comments.push({
        id: String(comment.id), authorType: String(comment.author_type), authorAgentId: (comment.author_agent_id as string | null) ?? null,
        authorUserId: (comment.author_user_id as string | null) ?? null, body, createdAt: iso(comment.created_at),
      });
    }
  } else {
    const more = await ctx.db.query('select 1 from issue_comments where issue_id = $1 and company_id = $2 and deleted_at is null limit 1', [issueId, companyId]);
    if (more.rows[0]) truncated = true;
  }
  return {
    issue: {
      id: String(issue.id), identifier: String(issue.identifier), title: String(issue.title), status: String(issue.status),
      hidden: issue.hidden_at !== null && issue.hidden_at !== undefined, description, documents, comments, truncated,
    },
  };
}
