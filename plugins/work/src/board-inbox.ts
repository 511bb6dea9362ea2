import { allOf, PluginError } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';

type Row = Record<string, unknown>;

/** What needs a board user, kind by kind. */
export const INBOX_KINDS = ['approval', 'budget_incident', 'blocked_issue', 'failed_run', 'mention'] as const;
export type InboxKind = (typeof INBOX_KINDS)[number];

/** One thing that needs a human, with the console page where it is handled. */
export interface BoardInboxItem {
  /** `<kind prefix>:<id>`: what a read mark names. */
  id: string;
  kind: InboxKind;
  title: string;
  detail: string | null;
  at: string;
  /** The console page that handles it. */
  href: string;
}

/** How far back failed runs count as news. */
const FAILED_RUN_DAYS = 7;
const FAILED_RUN_STATUSES = ['failed', 'timed_out'] as const;
const PER_KIND = 100;
/** The costs plugin is not there to ask (the codes services.call answers then). */
const COSTS_ABSENT = new Set(['service_unavailable', 'service_not_found', 'plugin_unavailable']);

function time(value: unknown): string {
  return value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString();
}

async function approvals(ctx: WorkContext, companyId: string): Promise<BoardInboxItem[]> {
  const rows = await ctx.approvals.list({ status: 'pending', limit: PER_KIND });
  return rows.map((row): BoardInboxItem => ({
    id: `approval:${String(row.id)}`, kind: 'approval', title: `Approval pending: ${String(row.type).replaceAll('_', ' ')}`,
    detail: typeof (row.payload as Row | null)?.name === 'string' ? String((row.payload as Row).name) : null,
    at: time(row.createdAt), href: `/companies/${companyId}/approvals`,
  }));
}

/**
 * Open budget incidents, from the costs plugin. Without it (not installed, disabled) there are
 * none to show, and the rest of the inbox still answers.
 */
async function budgetIncidents(ctx: WorkContext, companyId: string, names: Map<string, string>): Promise<BoardInboxItem[]> {
  let answer: { incidents: Row[] };
  try {
    answer = await ctx.services.call<{ incidents: Row[] }>('costs', 'open-incidents', {});
  } catch (error) {
    if (COSTS_ABSENT.has(String((error as PluginError).code))) return [];
    throw error;
  }
  return answer.incidents.map((row): BoardInboxItem => ({
    id: `incident:${String(row.id)}`, kind: 'budget_incident',
    title: `Budget ${row.thresholdType === 'hard' ? 'hard stop' : 'warning'}: ${scopeName(row, names)} at ${dollars(row.amountObserved)} of ${dollars(row.amountLimit)}`,
    detail: row.thresholdType === 'hard' ? `The ${String(row.scopeType)} is paused until the budget is raised or the incident resolved.` : null,
    at: time(row.createdAt), href: `/companies/${companyId}/costs`,
  }));
}

const dollars = (cents: unknown) => `$${(Number(cents) / 100).toFixed(2)}`;

/** The agent's name for an agent scope; otherwise the scope's kind (the company, a project). */
function scopeName(row: Row, names: Map<string, string>): string {
  if (row.scopeType === 'agent') return names.get(String(row.scopeId)) ?? 'an agent';
  return row.scopeType === 'company' ? 'the company' : 'a project';
}

async function blockedIssues(ctx: WorkContext, companyId: string): Promise<BoardInboxItem[]> {
  const { rows } = await ctx.db.query(
    `select id, identifier, title, updated_at from issues
      where company_id = $1 and status = 'blocked' and hidden_at is null order by updated_at desc, id limit ${PER_KIND}`, [companyId]);
  return rows.map((row): BoardInboxItem => ({
    id: `blocked:${String(row.id)}`, kind: 'blocked_issue', title: `${String(row.identifier)} is blocked`, detail: String(row.title),
    at: time(row.updated_at), href: `/companies/${companyId}/issues/${String(row.id)}`,
  }));
}

async function failedRuns(ctx: WorkContext, companyId: string, names: Map<string, string>): Promise<BoardInboxItem[]> {
  const since = new Date(Date.now() - FAILED_RUN_DAYS * 86_400_000).toISOString();
  const runs = await ctx.runs.recent({ statuses: [...FAILED_RUN_STATUSES], since, limit: PER_KIND });
  return runs.map((run): BoardInboxItem => ({
    id: `run:${run.runId}`, kind: 'failed_run',
    title: `Run ${run.status === 'timed_out' ? 'timed out' : 'failed'}: ${names.get(run.agentId) ?? 'an agent'}`,
    detail: null, at: run.finishedAt ?? run.createdAt, href: `/companies/${companyId}/runs/${run.runId}`,
  }));
}

/**
 * Comments that mention the user by `@handle` (the syntax agents are mentioned by, see
 * comments.ts), on visible issues, not deleted, not written by the user.
 */
async function mentions(ctx: WorkContext, companyId: string, userId: string, handle: string | null): Promise<BoardInboxItem[]> {
  // The handle is letters, digits and '-' (principals.read makes it so): safe inside the pattern.
  if (!handle || !/^[a-z0-9][a-z0-9-]{0,63}$/.test(handle)) return [];
  const { rows } = await ctx.db.query(
    `select c.id, c.body, c.created_at, i.id as issue_id, i.identifier from issue_comments c join issues i on i.id = c.issue_id
      where c.company_id = $1 and c.deleted_at is null and i.hidden_at is null and c.author_user_id is distinct from $2
        and c.body ~* $3
      order by c.created_at desc, c.id limit ${PER_KIND}`,
    [companyId, userId, `(^|[^[:alnum:]_@])@${handle}($|[^[:alnum:]-])`]);
  return rows.map((row): BoardInboxItem => ({
    id: `comment:${String(row.id)}`, kind: 'mention', title: `Mentioned on ${String(row.identifier)}`,
    detail: String(row.body).slice(0, 200), at: time(row.created_at), href: `/companies/${companyId}/issues/${String(row.issue_id)}#comment-${String(row.id)}`,
  }));
}

/** The board user the call acts for, with the handle comments mention them by; 403 for anyone else. */
export async function boardUser(ctx: WorkContext): Promise<{ userId: string; handle: string | null }> {
  const actor = await ctx.principals.actor();
  // The route is board-only (auth: board); a board key acts for a user, so this holds.
  if (actor.type !== 'board' || !actor.id) throw new PluginError(403, 'board_required', 'Board access required');
  return { userId: actor.id, handle: actor.mentionHandle ?? null };
}

/** Every item that needs the user now, newest first. */
export async function collectItems(ctx: WorkContext, companyId: string, userId: string, handle: string | null): Promise<BoardInboxItem[]> {
  const names = new Map((await ctx.agents.list()).map((agent) => [String(agent.id), String(agent.name)]));
  const groups = await allOf([
    approvals(ctx, companyId), budgetIncidents(ctx, companyId, names), blockedIssues(ctx, companyId), failedRuns(ctx, companyId, names),
    mentions(ctx, companyId, userId, handle),
  ]);
  return groups.flat().sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : a.id.localeCompare(b.id)));
}
