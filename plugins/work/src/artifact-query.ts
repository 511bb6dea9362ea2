/**
 * The artifact projection as SQL: documents, attachments and work products of a company's
 * non-hidden issues as rows of one shape, sorted by `updated_at desc, artifact_id desc` (the
 * artifact id is `<source>:<uuid>`, compared byte-wise). `$1` is the company.
 */
export type GroupBy = 'none' | 'task' | 'parent_task';

/** The media kind of a content type; the one place that says which is which. */
function mediaKind(contentType: string): string {
  return `case when ${contentType} like 'image/%' then 'image'
               when ${contentType} like 'video/%' then 'video'
               when ${contentType} in ('application/pdf', 'text/markdown', 'text/x-markdown', 'text/html') then 'document'
               when ${contentType} like 'text/%' or ${contentType} = 'application/json' then 'text'
               else 'file' end`;
}

/** Characters of a document's body shown as its preview. */
const PREVIEW_CHARS = 280;

/** `and <alias>.issue_id ...` restricting a branch to some issues, or nothing. */
type IssueScope = (alias: string) => string;
const everyIssue: IssueScope = () => '';

const documents = (scope: IssueScope) => `
  select ('document:' || d.id::text) collate "C" as artifact_id, 'document' as source, d.id as source_id, d.issue_id,
         coalesce(d.title, d.key) as title, left(d.latest_body, ${PREVIEW_CHARS}) as preview_text, 'text/markdown' as content_type,
         'document' as media_kind, d.key as document_key, null::uuid as attachment_id, null::text as url,
         d.created_by_agent_id, d.updated_at, d.key || ' ' || d.latest_body as search_text
    from issue_documents d where d.company_id = $1${scope('d')}`;
const attachments = (scope: IssueScope) => `
  select ('attachment:' || a.id::text) collate "C" as artifact_id, 'attachment' as source, a.id as source_id, a.issue_id,
         coalesce(a.filename, 'attachment') as title, null::text as preview_text, a.content_type,
         ${mediaKind('a.content_type')} as media_kind, null::text as document_key, a.id as attachment_id, null::text as url,
         a.created_by_agent_id, a.updated_at, a.content_type as search_text
    from issue_attachments a where a.company_id = $1${scope('a')}`;
// A work product's kind is its file's; without a file, a document-type product is a document and a link has none.
const workProducts = (scope: IssueScope) => `
  select ('work_product:' || w.id::text) collate "C" as artifact_id, 'work_product' as source, w.id as source_id, w.issue_id,
         w.title, null::text as preview_text, f.content_type,
         case when f.id is not null then ${mediaKind('f.content_type')} when w.type = 'document' then 'document' else '' end as media_kind,
         null::text as document_key, f.id as attachment_id, w.url,
         w.created_by_agent_id, w.updated_at, concat_ws(' ', w.type, w.url, w.external_id, f.filename) as search_text
    from work_products w left join issue_attachments f on f.id = w.attachment_id where w.company_id = $1${scope('w')}`;
const BRANCHES = [documents, attachments, workProducts];

/** Which issue an artifact's group is: its own (task), or its parent where it has a visible one (parent_task). */
export function groupIssue(groupBy: GroupBy): string {
  return groupBy === 'parent_task' ? 'coalesce(parent.id, i.id)' : 'i.id';
}

/** Artifacts of `source` (one branch or the whole union) with their issue, project, group and sort key. */
function withIssues(source: string, groupBy: GroupBy): string {
  return `select x.*, i.identifier as issue_identifier, i.title as issue_title, i.project_id, p.name as project_name,
             ${groupIssue(groupBy)} as group_issue_id, (extract(epoch from x.updated_at) * 1000000)::bigint::text as cursor_micros
        from (${source}) x
        join issues i on i.id = x.issue_id and i.hidden_at is null
        left join issues parent on parent.id = i.parent_id and parent.hidden_at is null
        left join projects p on p.id = i.project_id`;
}

/**
 * `with visible as (...)` holding at most `limit` rows of each source that match `where`, in
 * the page's order: each source's table is read newest first along its (company, updated_at)
 * index and stops at the page size, so a page costs the same however many artifacts the
 * company has. The page is then the first `limit` of their union.
 */
export function visibleArtifactCandidates(groupBy: GroupBy, where: string[], limit: string): string {
  const filter = where.length ? `where ${where.join(' and ')}` : '';
  const branches = BRANCHES.map((branch) =>
    `(select * from (${withIssues(branch(everyIssue), groupBy)}) v ${filter} order by updated_at desc, artifact_id desc limit ${limit})`);
  return `with visible as (${branches.join('\n  union all\n')})`;
}

/**
 * `with visible as (...)` holding only the artifacts of the groups in `groups` (a parameter
 * holding a jsonb list of issue ids): each source is read through its issue index for the
 * groups' own issues (and, grouped by parent task, their children), so its cost follows the
 * groups' sizes, not the company's.
 */
export function groupArtifacts(groupBy: GroupBy, groups: string): string {
  const ids = `array(select jsonb_array_elements_text(${groups}::jsonb)::uuid)`;
  const members = groupBy === 'parent_task'
    ? `(select id from issues where id = any(${ids}) union all select id from issues where parent_id = any(${ids}))`
    : `(select unnest(${ids}))`;
  const scope: IssueScope = (alias) => ` and ${alias}.issue_id in ${members}`;
  const branches = BRANCHES.map((branch) => withIssues(branch(scope), groupBy)).join('\n  union all\n');
  return `with visible as (select * from (${branches}) scoped where group_issue_id = any(${ids}))`;
}

export interface ArtifactFilter { kind?: string; projectId?: string; q?: string; groupIssueId?: string }

/** `where` conditions on `visible` for the query's filters; their values continue `params`. */
export function filterConditions(filter: ArtifactFilter, params: unknown[]): string[] {
  const where: string[] = [];
  if (filter.kind && filter.kind !== 'all') {
    params.push(filter.kind);
    where.push(`media_kind = $${params.length}`);
  }
  if (filter.projectId) {
    params.push(filter.projectId);
    where.push(`project_id = $${params.length}`);
  }
  if (filter.q && filter.q.trim()) {
    params.push(`%${filter.q.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    const q = `$${params.length}`;
    where.push(`(title ilike ${q} or search_text ilike ${q} or issue_identifier ilike ${q} or issue_title ilike ${q})`);
  }
  if (filter.groupIssueId) {
    params.push(filter.groupIssueId);
    where.push(`group_issue_id = $${params.length}`);
  }
  return where;
}

/** A keyset condition: rows sorting after (`time`, `id`) in descending order; `idType` casts the id where the column needs it. */
export function after(timeColumn: string, idColumn: string, key: { createdAt: string; id: string }, params: unknown[], idType?: 'uuid'): string {
  params.push(key.createdAt, key.id);
  return `(${timeColumn}, ${idColumn}) < ('epoch'::timestamptz + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length}${idType ? `::${idType}` : ''})`;
}
