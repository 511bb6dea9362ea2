import { PluginError } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';

/**
 * The artifact list's projection (migration 0013): one row per document, attachment and work
 * product in the shape the list shows, and per issue a rollup of its artifacts' count, newest
 * change and media kinds (migrations 0010 and 0013). Both are rewritten for an issue by every
 * write of one of its artifacts, in the write's transaction; this file is the one place that
 * says what an artifact's row holds.
 */

/** The media kind of a content type. */
function mediaKind(contentType: string): string {
  return `case when ${contentType} like 'image/%' then 'image'
               when ${contentType} like 'video/%' then 'video'
               when ${contentType} in ('application/pdf', 'text/markdown', 'text/x-markdown', 'text/html') then 'document'
               when ${contentType} like 'text/%' or ${contentType} = 'application/json' then 'text'
               else 'file' end`;
}

/** Characters of a document's body shown as its preview. */
const PREVIEW_CHARS = 280;

const COLUMNS = ['artifact_id', 'company_id', 'issue_id', 'source', 'source_id', 'title', 'preview_text', 'content_type', 'media_kind',
  'document_key', 'attachment_id', 'url', 'created_by_agent_id', 'updated_at', 'search_text'];

/**
 * An issue's artifacts (`$1`) as projection rows. A work product's kind is its file's; without
 * a file, a document-type product is a document and a link has none.
 */
const ISSUE_ARTIFACTS = `
  select 'document:' || d.id::text as artifact_id, d.company_id, d.issue_id, 'document' as source, d.id as source_id,
         coalesce(d.title, d.key) as title, left(d.latest_body, ${PREVIEW_CHARS}) as preview_text, 'text/markdown' as content_type,
         'document' as media_kind, d.key as document_key, null::uuid as attachment_id, null::text as url,
         d.created_by_agent_id, d.updated_at, d.key || ' ' || d.latest_body as search_text
    from issue_documents d where d.issue_id = $1
  union all
  select 'attachment:' || a.id::text, a.company_id, a.issue_id, 'attachment', a.id,
         coalesce(a.filename, 'attachment'), null, a.content_type,
         ${mediaKind('a.content_type')}, null, a.id, null,
         a.created_by_agent_id, a.updated_at, a.content_type
    from issue_attachments a where a.issue_id = $1
  union all
  select 'work_product:' || w.id::text, w.company_id, w.issue_id, 'work_product', w.id,
         w.title, null, f.content_type,
         case when f.id is not null then ${mediaKind('f.content_type')} when w.type = 'document' then 'document' else '' end,
         null, f.id, w.url,
         w.created_by_agent_id, w.updated_at, concat_ws(' ', w.type, w.url, w.external_id, f.filename)
    from work_products w left join issue_attachments f on f.id = w.attachment_id where w.issue_id = $1`;

const CHANGED = COLUMNS.filter((column) => column !== 'artifact_id');

/**
 * Brings the issue's projection rows and rollup up to date after a write of one of its
 * documents, attachments or work products. The rollup row is locked first and the rows are
 * rewritten in a second statement: that statement's snapshot is taken after the lock is held,
 * so it sees every artifact of any transaction that held the lock before, and of two
 * concurrent writers the later one writes both. Rows that did not change are not rewritten.
 */
export async function refreshIssueArtifacts(ctx: WorkContext, issueId: unknown, companyId: unknown): Promise<void> {
  await ctx.db.query(
    `insert into artifact_rollups (issue_id, company_id, artifact_count, latest_at) values ($1, $2, 0, '-infinity')
     on conflict (issue_id) do update set artifact_count = artifact_rollups.artifact_count`, [issueId, companyId]);
  await ctx.db.query(
    `with fresh as (${ISSUE_ARTIFACTS}),
     written as (
       insert into artifacts (${COLUMNS.join(', ')}) select ${COLUMNS.join(', ')} from fresh
       on conflict (artifact_id) do update set ${CHANGED.map((column) => `${column} = excluded.${column}`).join(', ')}
       where (${CHANGED.map((column) => `artifacts.${column}`).join(', ')}) is distinct from (${CHANGED.map((column) => `excluded.${column}`).join(', ')})
       returning 1),
     removed as (
       delete from artifacts gone where gone.issue_id = $1 and not exists (select 1 from fresh where fresh.artifact_id = gone.artifact_id)
       returning 1),
     counted as (select count(*)::int as n, max(updated_at) as latest, array_agg(distinct media_kind order by media_kind) as kinds from fresh),
     kept as (
       update artifact_rollups r set artifact_count = counted.n, latest_at = counted.latest, media_kinds = counted.kinds
         from counted where r.issue_id = $1 and counted.n > 0 returning 1)
     delete from artifact_rollups r using counted where r.issue_id = $1 and counted.n = 0`, [issueId]);
}

/**
 * Reads the issue a write of one of its documents, attachments or work products is for (404
 * when the call's company has no such issue) and locks the issue's artifacts for that write:
 * the rollup row, made here if the issue has none yet, which refreshIssueArtifacts locks
 * anyway. Writes of one issue's artifacts wait for each other from their start (a document's
 * revision check, the one primary work product, the projection), but not for a change of the
 * issue itself, a checkout or a comment, nor these for them: the issue row is read, not
 * locked; the rollup's foreign key keeps it from being deleted until the commit (KEY SHARE,
 * which no update of the issue waits for).
 */
export async function lockIssueArtifacts(ctx: WorkContext, issueId: string, companyId: string): Promise<Record<string, unknown>> {
  const { rows } = await ctx.db.query(
    `with issue as (select * from issues where id = $1::uuid and company_id = $2::uuid),
     locked as (
       insert into artifact_rollups (issue_id, company_id, artifact_count, latest_at) select id, company_id, 0, '-infinity' from issue
       on conflict (issue_id) do update set artifact_count = artifact_rollups.artifact_count
       returning issue_id)
     select issue.* from issue join locked on locked.issue_id = issue.id`, [issueId, companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Issue not found');
  return rows[0];
}
