import type { SummariesContext } from './context.ts';
import type { Selector } from './selector.ts';

/** Issues per status group in a generation task's snapshot. */
export const SNAPSHOT_GROUP_LIMIT = 12;
/** Without an earlier summary, "recently done" looks back a week. */
const INITIAL_LOOKBACK_MS = 7 * 24 * 60 * 60 * 1000;

interface SnapshotIssue { identifier: string; title: string; status: string; priority: string; updatedAt: string }
type Groups = Record<'blocked' | 'inReview' | 'inProgress' | 'recentlyDone', SnapshotIssue[]>;

const SCOPE_LABELS: Record<Selector['scopeKind'], string> = { project: 'project', project_workspace: 'workspace', workspaces_overview: 'workspaces overview' };
export const scopeLabel = (sel: Selector) => SCOPE_LABELS[sel.scopeKind];

/** The slot's routes, relative to the API. */
export function slotPath(sel: Selector): string {
  return `/api/companies/${sel.companyId}/summary-slots/${sel.scopeKind}/${sel.slotKey}`;
}

/**
 * The scope's issues a summarizer works from: blocked, in review, in progress, and done since
 * the last summary (or the last week), each the 12 most recently changed. A workspace's scope is
 * its project's issues (issues name a project, not a workspace).
 */
async function snapshot(ctx: SummariesContext, projectId: string | null, lastGeneratedAt: string | null): Promise<{ groups: Groups; doneSince: string }> {
  const doneSince = lastGeneratedAt ?? new Date(Date.now() - INITIAL_LOOKBACK_MS).toISOString();
  const groups = await ctx.services.call<Groups>('work', 'issue-snapshot', { projectId, doneSince, limit: SNAPSHOT_GROUP_LIMIT });
  return { groups, doneSince };
}

function group(heading: string, issues: SnapshotIssue[]): string[] {
  const lines = issues.map((issue) => `- ${issue.identifier}: ${issue.title} (${issue.priority}; updated ${issue.updatedAt})`);
  return [`### ${heading}`, ...(lines.length ? lines : ['- None.'])];
}

/** The generation task's description: what to write, where, and the scope's snapshot. */
export async function taskDescription(ctx: SummariesContext, sel: Selector, projectId: string | null, lastGeneratedAt: string | null): Promise<string> {
  const { groups, doneSince } = await snapshot(ctx, projectId, lastGeneratedAt);
  const target = sel.scopeId ? `\`${sel.scopeId}\`` : 'the workspaces overview';
  const query = sel.scopeId ? `?scopeId=${sel.scopeId}` : '';
  return [
    `Generate the ${scopeLabel(sel)} summary for ${target}.`,
    '',
    `- Read the current slot: \`GET ${slotPath(sel)}${query}\` (its document has the latest body and \`latestRevisionId\`).`,
    `- Write the summary: \`PUT ${slotPath(sel)}\` with \`markdown\`, \`generationIssueId\` (this task's id)${sel.scopeId ? ', `scopeId`' : ''}, \`baseRevisionId\` (the latest revision, when there is one) and \`model\`.`,
    '',
    'Write one short Markdown summary of what needs a decision, what waits on review and what was done recently; reference at most a few issues, never a list of links. Write it from this run of this task, then close the task.',
    '',
    '## Scope snapshot',
    '',
    `Taken at ${new Date().toISOString()}; recently done means changed since ${doneSince}. Work from this snapshot rather than the issue list.`,
    '',
    ...group('Blocked', groups.blocked), '',
    ...group('In review', groups.inReview), '',
    ...group('In progress', groups.inProgress), '',
    ...group('Recently done', groups.recentlyDone),
  ].join('\n');
}

/** `Summarize project on 2025-01-31 12:00 UTC`. */
export function taskTitle(sel: Selector, at = new Date()): string {
  return `Summarize ${scopeLabel(sel)} on ${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
