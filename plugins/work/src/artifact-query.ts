/**
 * The artifact list as SQL over the projection (artifact-projection.ts), sorted by
 * `updated_at desc, artifact_id desc` (the artifact id is `<source>:<uuid>`, compared
 * byte-wise). `$1` is the company.
 */
export type GroupBy = 'none' | 'task' | 'parent_task';

/** Which issue an artifact's group is (`column` of it): its own (task), or its parent where it has a visible one (parent_task). */
export function groupIssue(groupBy: GroupBy, column = 'id'): string {
  return groupBy === 'parent_task' ? `coalesce(parent.${column}, i.${column})` : `i.${column}`;
}

/** The company's artifacts of visible issues (`and ...` narrowing them), with their issue, project, group and sort key. */
function withIssues(groupBy: GroupBy, narrowing = ''): string {
  return `select a.*, i.identifier as issue_identifier, i.title as issue_title, i.project_id, p.name as project_name,
             ${groupIssue(groupBy)} as group_issue_id, ${groupIssue(groupBy, 'identifier')} as group_identifier, ${groupIssue(groupBy, 'title')} as group_title,
             (extract(epoch from a.updated_at) * 1000000)::bigint::text as cursor_micros
        from artifacts a
        join issues i on i.id = a.issue_id and i.hidden_at is null
        left join issues parent on parent.id = i.parent_id and parent.hidden_at is null
        left join projects p on p.id = i.project_id
       where a.company_id = $1${narrowing}`;
}

/**
 * `with visible as (...)` holding the first `limit` artifacts that match `where`, in the page's
 * order: one walk of the projection's (company, updated_at) index (or its per-kind one) that
 * stops at the page size, so a page costs the same however many artifacts the company has.
 */
export function visibleArtifactCandidates(groupBy: GroupBy, where: string[], limit: string): string {
  const filter = where.length ? `where ${where.join(' and ')}` : '';
  return `with visible as (select * from (${withIssues(groupBy)}) v ${filter} order by updated_at desc, artifact_id desc limit ${limit})`;
}

/** The issue ids of a jsonb list parameter (`$n`), as an SQL uuid array. */
export function idsOf(param: string): string {
  return `array(select jsonb_array_elements_text(${param}::jsonb)::uuid)`;
}

/**
 * `visible as (...)`, a CTE holding only the artifacts of the groups in `ids` (an SQL uuid
 * array): read through the projection's issue index for the groups' own issues (and, grouped
 * by parent task, their children), so its cost follows the groups' sizes, not the company's.
 */
export function groupArtifacts(groupBy: GroupBy, ids: string): string {
  // By task a group is its issue; by parent task, the issue and those of its children that it groups.
  if (groupBy !== 'parent_task') return `visible as (${withIssues(groupBy, ` and a.issue_id = any(${ids})`)})`;
  const members = `(select id from issues where id = any(${ids}) union all select id from issues where parent_id = any(${ids}))`;
  return `visible as (select * from (${withIssues(groupBy, ` and a.issue_id in ${members}`)}) scoped where group_issue_id = any(${ids}))`;
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
