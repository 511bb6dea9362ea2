import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { after, filterConditions, groupArtifacts, groupIssue, idsOf, visibleArtifactCandidates, type ArtifactFilter, type GroupBy } from './artifact-query.ts';
import { attachmentContentPath } from './artifact-json.ts';
import type { WorkContext } from './context.ts';
import { decodeCursor, encodeCursor, UUID_PATTERN } from './cursor.ts';
import { time } from './json.ts';
import { readLimit } from './sql.ts';

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

/** One page of artifacts, newest first; the cursor is the last one's sort key. An opened group is read through its issues. */
async function artifactPage(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy) {
  const params: unknown[] = [companyId];
  const groupIssueId = query.filter.groupIssueId;
  const where = filterConditions({ ...query.filter, groupIssueId: undefined }, params);
  if (query.cursor) where.push(after('updated_at', 'artifact_id', decodeCursor(query.cursor, ARTIFACT_CURSOR), params));
  const limit = String(readLimit(query.limit + 1));
  let sql: string;
  if (groupIssueId) {
    params.push([groupIssueId]);
    sql = `with ${groupArtifacts(groupBy, idsOf(`$${params.length}`))} select * from visible ${where.length ? `where ${where.join(' and ')}` : ''}`;
  } else {
    // The candidates already hold only matching rows.
    sql = `${visibleArtifactCandidates(groupBy, where, limit)} select * from visible`;
  }
  const { rows } = await ctx.db.query(`${sql} ${ORDER} limit ${limit}`, params);
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  const nextCursor = rows.length > query.limit && last ? encodeCursor({ createdAt: String(last.cursor_micros), id: String(last.artifact_id) }) : null;
  return { page, nextCursor };
}

/** Where a group's newest matching artifact sorts: its time (microseconds) and the group's issue id. */
interface GroupKey { group_issue_id: string; cursor_micros: string }

/** The groups' newest matching artifact each (for groups a walk met after its start, which may have newer ones). */
async function newestOf(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy, ids: string[]): Promise<GroupKey[]> {
  if (!ids.length) return [];
  const params: unknown[] = [companyId];
  const where = filterConditions({ ...query.filter, groupIssueId: undefined }, params);
  params.push(ids);
  const { rows } = await ctx.db.query(
    `with ${groupArtifacts(groupBy, idsOf(`$${params.length}`))}
     select group_issue_id, (extract(epoch from max(updated_at)) * 1000000)::bigint::text as cursor_micros
       from visible ${where.length ? `where ${where.join(' and ')}` : ''} group by group_issue_id`, params);
  return rows as unknown as GroupKey[];
}

/**
 * CTEs after `visible` (groupArtifacts) for group objects, ending in `previews`: each group's
 * first artifacts that match `where`, newest first, each row with its group's figures (count,
 * media kinds and newest change over the matching artifacts).
 */
function groupPreviews(where: string[]): string {
  return `matching as (select * from visible ${where.length ? `where ${where.join(' and ')}` : ''}),
     figures as (
       select group_issue_id, count(*)::int as group_count, max(updated_at) as group_updated_at,
              array_agg(distinct media_kind order by media_kind) as group_media_kinds
         from matching group by group_issue_id),
     ranked as (select matching.*, row_number() over (partition by group_issue_id ${ORDER}) as rank from matching),
     previews as (select ranked.*, figures.group_count, figures.group_updated_at, figures.group_media_kinds
                    from ranked join figures using (group_issue_id) where rank <= ${PREVIEWS_PER_GROUP})`;
}

/** Group objects in the order of `ids` from their previews (rows of ranked with their figures); a group without previews has none. */
async function toGroupObjects(ctx: WorkContext, groupBy: GroupBy, ids: string[], previews: Row[]) {
  const names = await agentNamesOf(ctx, previews);
  return ids.flatMap((id) => {
    // A group's previews carry its figures and name its issue.
    const members = previews.filter((row) => row.group_issue_id === id);
    const first = members[0];
    if (!first) return [];
    const issue = { id: first.group_issue_id, identifier: first.group_identifier, title: first.group_title };
    return [{
      id: `${groupBy}:${String(issue.id)}`, groupBy, issue, title: issue.title,
      count: Number(first.group_count), mediaKinds: (first.group_media_kinds as string[]).filter(Boolean),
      previewArtifacts: members.map((row) => artifactJson(row, names)),
      updatedAt: time(first.group_updated_at), href: `/issues/${String(issue.identifier)}`,
    }];
  });
}

/**
 * The groups' figures (count, media kinds, newest change of the artifacts that match the
 * query's filters) and first artifacts, as group objects in the order of `ids`, in one query.
 * A group without a matching artifact has none.
 */
async function groupObjects(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy, ids: string[]) {
  if (!ids.length) return [];
  const params: unknown[] = [companyId];
  const where = filterConditions({ ...query.filter, groupIssueId: undefined }, params);
  params.push(ids);
  const { rows } = await ctx.db.query(
    `with ${groupArtifacts(groupBy, idsOf(`$${params.length}`))}, ${groupPreviews(where)}
     select * from previews ${ORDER}`, params);
  return toGroupObjects(ctx, groupBy, ids, rows);
}

/**
 * Artifacts read per step of the group walk through the artifacts, at most: a walk starts with
 * a page's worth (where each artifact is a group of its own, one step finds the page) and
 * doubles its step while groups repeat.
 */
const MAX_WALK_STEP = 200;
/** Issues read per step of the rollup walk by parent task. */
const PARENT_WALK_STEP = 50;
/** Sorts after every issue id in a walk of the rollups: a walk from a cursor starts at its time itself. */
const LAST_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

/** (newest artifact, group id) descending: the order of group pages. */
function newerGroupFirst(a: { micros: bigint; id: string }, b: { micros: bigint; id: string }): number {
  if (a.micros !== b.micros) return a.micros > b.micros ? -1 : 1;
  return a.id > b.id ? -1 : a.id < b.id ? 1 : 0;
}

/** One step of a group walk: rows newest first after `position`, each with its group and its time. */
interface WalkRow { position_id: string; group_issue_id: string; cursor_micros: string }
interface Walk {
  start: string;
  /** Rows of the first step, and of any step at most. */
  step: number;
  maxStep: number;
  /** A step's statement: `step` rows after `position`; `params` holds the company as $1 and takes the statement's own. */
  sql: (position: { createdAt: string; id: string } | null, step: number, params: unknown[]) => string;
  /** Whether a row's time is always its group's newest (one row per group), also in a walk from a cursor. */
  oneRowPerGroup: boolean;
}

async function readWalk(ctx: WorkContext, companyId: string, walk: Walk, position: { createdAt: string; id: string } | null, step: number): Promise<WalkRow[]> {
  const params: unknown[] = [companyId];
  const { rows } = await ctx.db.query(walk.sql(position, step, params), params);
  return rows as unknown as WalkRow[];
}

/** A walk over the artifacts that match the query's filters (a group first appears at its newest matching artifact). */
function artifactWalk(query: Query, groupBy: GroupBy): Walk {
  return {
    // A page's groups and one more, and a row past the last of them (the walk stops only once past its time).
    start: '~', step: readLimit(query.limit + 2), maxStep: readLimit(Math.max(query.limit + 2, MAX_WALK_STEP)), oneRowPerGroup: false,
    sql: (position, step, params) => {
      const where = filterConditions(query.filter, params);
      if (position) where.push(after('updated_at', 'artifact_id', position, params));
      return `${visibleArtifactCandidates(groupBy, where, String(step))}
         select artifact_id as position_id, group_issue_id, cursor_micros from visible ${ORDER} limit ${step}`;
    },
  };
}

/**
 * A walk over the issues' artifact rollups, newest first: without filters a group first appears
 * at its member issue with the newest artifact, one row per issue instead of one per artifact.
 */
function rollupWalk(query: Query, groupBy: GroupBy): Walk {
  // By task each issue is a group: a page is its first limit + 1. By parent task one group may have many member issues.
  const step = readLimit(groupBy === 'task' ? query.limit + 1 : Math.max(query.limit + 1, PARENT_WALK_STEP));
  return {
    start: LAST_UUID, step, maxStep: step, oneRowPerGroup: groupBy === 'task',
    sql: (position, _step, params) => {
      const where = ['r.company_id = $1'];
      if (position) where.push(after('r.latest_at', 'r.issue_id', position, params, 'uuid'));
      return `select r.issue_id::text as position_id, ${groupIssue(groupBy)} as group_issue_id,
                (extract(epoch from r.latest_at) * 1000000)::bigint::text as cursor_micros
           from artifact_rollups r
           join issues i on i.id = r.issue_id and i.hidden_at is null
           left join issues parent on parent.id = i.parent_id and parent.hidden_at is null
          where ${where.join(' and ')} order by r.latest_at desc, r.issue_id desc limit ${step}`;
    },
  };
}

/** Whether the query narrows the artifacts (then groups are found through the matching artifacts themselves). */
function filtered(filter: ArtifactFilter): boolean {
  return Boolean((filter.kind && filter.kind !== 'all') || filter.projectId || (filter.q && filter.q.trim()));
}

/** A found group: its issue id and where its newest matching artifact sorts. */
type FoundGroup = GroupKey & { micros: bigint; id: string };

/**
 * Whether a walk that read `rowCount` rows in a step of `step`, the last at `lastMicros`, has
 * found the page: it ended, or it has passed the time of the group after the page's last (a
 * group not yet met sorts after every group met before it). Walking rollups by task, the walk's
 * order is the groups' order: once the page and one more are met, the page is found.
 */
function walkDone(rowCount: number, step: number, lastMicros: bigint | null, found: FoundGroup[], limit: number, rollupsByTask: boolean): boolean {
  if (rowCount < step || lastMicros === null) return true;
  if (found.length <= limit) return false;
  return rollupsByTask || lastMicros < found[limit]!.micros;
}

/** The page's groups (the first `limit` found) and the cursor after its last. */
function pageOf(found: FoundGroup[], limit: number, groupBy: GroupBy): { ids: string[]; nextCursor: string | null } {
  const page = found.slice(0, limit);
  const end = page[page.length - 1];
  const nextCursor = found.length > limit && end ? encodeCursor({ createdAt: end.cursor_micros, id: `${groupBy}:${end.id}` }) : null;
  return { ids: page.map((group) => group.id), nextCursor };
}

/**
 * The first page of groups in one statement, for a walk's first step finds most first pages:
 * the step, its first groups in page order (a walk from the top meets each group first at its
 * newest member), and their figures and previews. Null when the step did not find the page
 * (its groups repeat): the page is then walked step by step.
 */
async function firstGroupPage(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy, walk: Walk, rollupsByTask: boolean) {
  const params: unknown[] = [companyId];
  const steps = walk.sql(null, walk.step, params);
  const where = filterConditions({ ...query.filter, groupIssueId: undefined }, params);
  const { rows } = await ctx.db.query(
    `with walk as (${steps}),
     page_groups as (
       select group_issue_id, max(cursor_micros::bigint) as micros from walk
        group by group_issue_id order by micros desc, group_issue_id desc limit ${readLimit(query.limit + 1)}),
     ${groupArtifacts(groupBy, 'array(select group_issue_id from page_groups)')}, ${groupPreviews(where)}
     select previews.*, page_groups.micros::text as group_micros,
            (select count(*) from walk)::int as walk_rows, (select min(cursor_micros::bigint) from walk)::text as walk_last_micros
       from previews join page_groups using (group_issue_id) ${ORDER}`, params);
  // Every group the walk meets has a matching artifact: no previews, no groups.
  if (!rows.length) return { groups: [], nextCursor: null };
  const found = new Map<string, FoundGroup>();
  for (const row of rows) {
    const id = String(row.group_issue_id);
    if (!found.has(id)) found.set(id, { group_issue_id: id, cursor_micros: String(row.group_micros), micros: BigInt(String(row.group_micros)), id });
  }
  const ordered = [...found.values()].sort(newerGroupFirst);
  if (!walkDone(Number(rows[0]!.walk_rows), walk.step, BigInt(String(rows[0]!.walk_last_micros)), ordered, query.limit, rollupsByTask)) return null;
  const { ids, nextCursor } = pageOf(ordered, query.limit, groupBy);
  return { groups: await toGroupObjects(ctx, groupBy, ids, rows.filter((row) => ids.includes(String(row.group_issue_id)))), nextCursor };
}

/**
 * One page of groups, the group with the newest artifact first; the cursor is the last
 * group's sort key. Groups are found by walking newest first from the cursor (the issues'
 * artifact rollups, or with filters the matching artifacts): a group first appears in the walk
 * at its newest member, so the walk can stop once it has passed the newest artifact of the
 * group after the page's last. A walk from the top meets every group first at its newest
 * member; a walk from a cursor may meet a group whose newest member lies before the cursor: it
 * was on an earlier page and is left out. The walk and the groups' figures read only the
 * groups' own rows, so a page costs the same however many artifacts the company has.
 */
async function groupPage(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy) {
  let bound: { micros: bigint; id: string } | null = null;
  if (query.cursor) {
    const key = decodeCursor(query.cursor, new RegExp(`^${groupBy}:${UUID_PATTERN}$`));
    bound = { micros: BigInt(key.createdAt), id: key.id.slice(groupBy.length + 1) };
  }
  const byRollup = !filtered(query.filter);
  const rollupsByTask = byRollup && groupBy === 'task';
  const walk = byRollup ? rollupWalk(query, groupBy) : artifactWalk(query, groupBy);
  if (!bound) {
    const first = await firstGroupPage(ctx, companyId, query, groupBy, walk, rollupsByTask);
    if (first) return first;
  }
  const seen = new Set<string>();
  const found: FoundGroup[] = [];
  // The walk starts at the cursor's time itself: groups sharing it with the page's last one may follow it.
  let position: { createdAt: string; id: string } | null = bound ? { createdAt: String(bound.micros), id: walk.start } : null;
  for (let step = walk.step; ; step = readLimit(Math.min(step * 2, walk.maxStep))) {
    const rows = await readWalk(ctx, companyId, walk, position, step);
    const firstMet = new Map<string, WalkRow>();
    for (const row of rows) if (!seen.has(row.group_issue_id) && !firstMet.has(row.group_issue_id)) firstMet.set(row.group_issue_id, row);
    for (const id of firstMet.keys()) seen.add(id);
    const keys = !bound || walk.oneRowPerGroup ? [...firstMet.values()] : await newestOf(ctx, companyId, query, groupBy, [...firstMet.keys()]);
    for (const key of keys) {
      const group = { group_issue_id: key.group_issue_id, cursor_micros: key.cursor_micros, micros: BigInt(key.cursor_micros), id: key.group_issue_id };
      if (!bound || newerGroupFirst(bound, group) < 0) found.push(group);
    }
    found.sort(newerGroupFirst);
    const last = rows[rows.length - 1];
    if (walkDone(rows.length, step, last ? BigInt(String(last.cursor_micros)) : null, found, query.limit, rollupsByTask)) break;
    position = { createdAt: String(last!.cursor_micros), id: String(last!.position_id) };
  }
  const { ids, nextCursor } = pageOf(found, query.limit, groupBy);
  return { groups: await groupObjects(ctx, companyId, query, groupBy, ids), nextCursor };
}

/** One group opened: its artifacts page by page, and the group itself (count 0 when nothing matches). */
async function selectedGroup(ctx: WorkContext, companyId: string, query: Query, groupBy: GroupBy) {
  const groupIssueId = query.filter.groupIssueId!;
  const { rows: issues } = await ctx.db.query('select id, identifier, title from issues where id = $1 and company_id = $2 and hidden_at is null', [groupIssueId, companyId]);
  const issue = issues[0];
  if (!issue) throw new PluginError(404, 'not_found', 'Issue not found');
  const [group] = await groupObjects(ctx, companyId, query, groupBy, [groupIssueId]);
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
