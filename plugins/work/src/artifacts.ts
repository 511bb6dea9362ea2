import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { after, filterConditions, visibleArtifactCandidates, visibleArtifacts, type ArtifactFilter, type GroupBy } from './artifact-query.ts';
import { attachmentContentPath } from './artifact-json.ts';
import type { WorkContext } from './context.ts';
import { decodeCursor, encodeCursor, UUID_PATTERN } from './cursor.ts';
import { time } from './json.ts';
import { list } from './sql.ts';

type Row = Record<string, unknown>;

const DEFAULT_LIMIT = 30;
/** Artifacts shown on each group. */
const PREVIEWS_PER_GROUP = 4;
const ARTIFACT_CURSOR = new RegExp(`^(document|attachment|work_product):${UUID_PATTERN}$`);
const ORDER = 'order by updated_at desc, artifact_id desc';

/** Where each kind of artifact is read, opened in a browser, and downloaded. */
function paths(row: Row): { contentPath: string | null; openPath: string | null; downloadPath: string | null } {
  if (row.source === 'document') {
    const path = `/api/issues/${String(row.issue_id)}/documents/${String(row.document_key)}`;
    return { contentPath: path, openPath: path, downloadPath: null };
  }
  if (row.attachment_id) {
    const path = attachmentContentPath(row.attachment_id);
    return { contentPath: path, openPath: path, downloadPath: `${path}?download=true` };
  }
  return { contentPath: null, openPath: (row.url as string | null) ?? null, downloadPath: null };
}

function anchor(row: Row): string {
  return row.source === 'document' ? `document-${String(row.document_key)}` : `${String(row.source).replace('_', '-')}-${String(row.source_id)}`;
}

function artifactJson(row: Row, agentNames: Map<string, string>) {
  const agentId = (row.created_by_agent_id as string | null) ?? null;
  return {
    id: row.artifact_id, source: row.source, mediaKind: row.media_kind, title: row.title, previewText: row.preview_text ?? null,
    contentType: row.content_type ?? null, ...paths(row),
    issue: { id: row.issue_id, identifier: row.issue_identifier, title: row.issue_title },
    project: row.project_id ? { id: row.project_id, name: row.project_name ?? null } : null,
    createdByAgent: agentId ? { id: agentId, name: agentNames.get(agentId) ?? null } : null,
    updatedAt: time(row.updated_at), href: `/issues/${String(row.issue_identifier)}#${anchor(row)}`,
  };
}

interface Query { filter: ArtifactFilter; groupBy: GroupBy; limit: number; cursor?: string }

function readQuery(req: RouteRequest): Query {
  const query = req.query;
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  return {
    filter: { kind: text(query.kind), projectId: text(query.projectId)?.toLowerCase(), q: text(query.q), groupIssueId: text(query.groupIssueId)?.toLowerCase() },
    groupBy: (text(query.groupBy) ?? 'none') as GroupBy,
    limit: typeof query.limit === 'number' ? query.limit : DEFAULT_LIMIT,
    cursor: text(query.cursor),
  };
}

async function agentNamesOf(ctx: WorkContext, rows: Row[]): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  if (!rows.some((row) => row.created_by_agent_id)) return names;
  for (const agent of await ctx.agents.list()) names.set(String(agent.id), String(agent.name));
  return names;
}

/** One page of artifacts, newest first; the cursor is the last one's sort key. */
async function artifactPage(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy) {
  const params: unknown[] = [companyId];
  const where = filterConditions(query.filter, params);
  if (query.cursor) where.push(after('updated_at', 'artifact_id', decodeCursor(query.cursor, ARTIFACT_CURSOR), params));
  params.push(query.limit + 1);
  const { rows } = await ctx.db.query(
    `${visibleArtifactCandidates(groupBy, where, `$${params.length}`)} select * from visible ${ORDER} limit $${params.length}`, params);
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const nextCursor = rows.length > query.limit && last ? encodeCursor({ createdAt: String(last.cursor_micros), id: String(last.artifact_id) }) : null;
  return { page, nextCursor };
}

/** The groups' issues and first artifacts, as group objects in the order of `groups`. */
async function groupObjects(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy, groups: Row[]) {
  if (!groups.length) return [];
  const ids = groups.map((group) => String(group.group_issue_id));
  const params: unknown[] = [companyId];
  const where = filterConditions({ ...query.filter, groupIssueId: undefined }, params);
  params.push(ids);
  where.push(`group_issue_id = any(${list(params.length, 'uuid')})`);
  const { rows: previews } = await ctx.db.query(
    `${visibleArtifacts(groupBy)} select * from (
       select visible.*, row_number() over (partition by group_issue_id ${ORDER}) as rank from visible where ${where.join(' and ')}
     ) ranked where rank <= ${PREVIEWS_PER_GROUP} ${ORDER}`, params);
  const { rows: issues } = await ctx.db.query(`select id, identifier, title from issues where id = any(${list(1, 'uuid')})`, [ids]);
  const names = await agentNamesOf(ctx, previews);
  return groups.map((group) => {
    const issue = issues.find((row) => row.id === group.group_issue_id)!;
    return {
      id: `${groupBy}:${String(issue.id)}`, groupBy, issue: { id: issue.id, identifier: issue.identifier, title: issue.title }, title: issue.title,
      count: Number(group.count), mediaKinds: (group.media_kinds as string[]).filter(Boolean),
      previewArtifacts: previews.filter((row) => row.group_issue_id === issue.id).map((row) => artifactJson(row, names)),
      updatedAt: time(group.updated_at), href: `/issues/${String(issue.identifier)}`,
    };
  });
}

const GROUP_AGGREGATE = `select group_issue_id, count(*)::int as count, max(updated_at) as updated_at,
       (extract(epoch from max(updated_at)) * 1000000)::bigint::text as cursor_micros,
       array_agg(distinct media_kind order by media_kind) as media_kinds
  from visible`;

/** One page of groups, the group with the newest artifact first; the cursor is the last group's sort key. */
async function groupPage(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy) {
  const params: unknown[] = [companyId];
  const where = filterConditions(query.filter, params);
  const having: string[] = [];
  if (query.cursor) {
    const key = decodeCursor(query.cursor, new RegExp(`^${groupBy}:${UUID_PATTERN}$`));
    having.push(after('max(updated_at)', 'group_issue_id', { createdAt: key.createdAt, id: key.id.slice(groupBy.length + 1) }, params));
  }
  params.push(query.limit + 1);
  const { rows } = await ctx.db.query(
    `${visibleArtifacts(groupBy)} ${GROUP_AGGREGATE} ${where.length ? `where ${where.join(' and ')}` : ''}
      group by group_issue_id ${having.length ? `having ${having.join(' and ')}` : ''}
      order by max(updated_at) desc, group_issue_id desc limit $${params.length}`, params);
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const nextCursor = rows.length > query.limit && last ? encodeCursor({ createdAt: String(last.cursor_micros), id: `${groupBy}:${String(last.group_issue_id)}` }) : null;
  return { groups: await groupObjects(ctx, companyId, query, groupBy, page), nextCursor };
}

/** One group opened: its artifacts page by page, and the group itself (count 0 when nothing matches). */
async function selectedGroup(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy) {
  const groupIssueId = query.filter.groupIssueId!;
  const { rows: issues } = await ctx.db.query('select id, identifier, title from issues where id = $1 and company_id = $2 and hidden_at is null', [groupIssueId, companyId]);
  const issue = issues[0];
  if (!issue) throw new PluginError(404, 'not_found', 'Issue not found');
  const params: unknown[] = [companyId];
  const where = filterConditions(query.filter, params);
  const { rows: aggregate } = await ctx.db.query(`${visibleArtifacts(groupBy)} ${GROUP_AGGREGATE} where ${where.join(' and ')} group by group_issue_id`, params);
  const [group] = await groupObjects(ctx, companyId, query, groupBy, aggregate);
  const { page, nextCursor } = await artifactPage(ctx, companyId, query, groupBy);
  const names = await agentNamesOf(ctx, page);
  return {
    artifacts: page.map((row) => artifactJson(row, names)), nextCursor,
    selectedGroup: group ?? {
      id: `${groupBy}:${String(issue.id)}`, groupBy, issue: { id: issue.id, identifier: issue.identifier, title: issue.title }, title: issue.title,
      count: 0, mediaKinds: [], previewArtifacts: [], updatedAt: null, href: `/issues/${String(issue.identifier)}`,
    },
  };
}

/**
 * `GET /api/companies/{companyId}/artifacts`: documents, attachments and work products of the
 * company's non-hidden issues as one list, newest change first, filtered by media kind,
 * project and text, flat or grouped by task or parent task, paged by an opaque cursor.
 */
export async function listArtifacts(req: RouteRequest, ctx: WorkContext) {
  const companyId = req.companyId!;
  const query = readQuery(req);
  if (query.filter.groupIssueId) return selectedGroup(ctx, companyId, query, query.groupBy === 'none' ? 'task' : query.groupBy);
  if (query.groupBy !== 'none') return groupPage(ctx, companyId, query, query.groupBy);
  const { page, nextCursor } = await artifactPage(ctx, companyId, query, 'none');
  const names = await agentNamesOf(ctx, page);
  return { artifacts: page.map((row) => artifactJson(row, names)), nextCursor };
}
