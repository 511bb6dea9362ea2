import type { RouteRequest } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { issueJson } from './json.ts';
import { announceCreated, insertIssueRow } from './issues.ts';
import { list } from './sql.ts';

type Row = Record<string, unknown>;

/**
 * Issue-graph liveness recovery. A live issue (todo, in progress, in review or blocked) is
 * stalled when one of its blockers can never finish as things stand:
 * - `blocked_by_cancelled_issue`: the blocker was cancelled, so the work it stood for will not come;
 * - `blocked_by_unassigned_issue`: nobody (agent or user) is assigned to the blocker;
 * - `blocked_by_backlog_issue`: the blocker sits in the backlog, where nobody picks it up;
 * - `blocked_by_uninvokable_assignee`: the blocker's agent cannot run (paused, error, pending
 *   approval, terminated, or gone).
 * One escalation issue per finding goes to the first agent that can run, starting at the
 * blocker's assignee and going up its reporting chain, else to the root agent (the CEO: an
 * agent reporting to nobody, role ceo first, oldest first). A finding counts when its
 * relation, the issue or the blocker changed within `lookbackHours`. The escalation is keyed by
 * the finding (kind, issue, blocker) in its origin: running again finds it and creates nothing.
 *
 * Served per company by the host (the routes are `perCompany`): each call sees one company's
 * issues and agents, and numbers its escalations from that company's counter. The host first
 * asks which companies have a candidate relation at all (livenessCompanies, one query over
 * the instance), so an idle company costs nothing and the cost follows the issues, not the
 * number of companies. Two runs of one company with escalations to make take turns on its run
 * lock (liveness_runs): the second finds the first's escalations; previews, runs that find every
 * escalation made and other companies never wait.
 */
const UNINVOKABLE = new Set(['paused', 'error', 'pending_approval', 'terminated']);
const ORIGIN = 'liveness_escalation';

export type FindingKind = 'blocked_by_cancelled_issue' | 'blocked_by_unassigned_issue' | 'blocked_by_backlog_issue' | 'blocked_by_uninvokable_assignee';

const REASONS: Record<FindingKind, string> = {
  blocked_by_cancelled_issue: 'the blocker was cancelled',
  blocked_by_unassigned_issue: 'nobody is assigned to the blocker',
  blocked_by_backlog_issue: 'the blocker is in the backlog',
  blocked_by_uninvokable_assignee: "the blocker's agent cannot run",
};

interface Finding {
  key: string;
  kind: FindingKind;
  companyId: string;
  issueId: string;
  issueIdentifier: string;
  blockerIssueId: string;
  blockerIdentifier: string;
  blockerAssigneeAgentId: string | null;
  ownerAgentId: string | null;
  escalationIssueId: string | null;
  escalationIdentifier: string | null;
  /** `existing`: made by an earlier run; `created` by this run; `would_create` in a preview. */
  outcome: 'existing' | 'created' | 'would_create';
}

/**
 * The relations the recovery considers, in every company: a live, visible issue blocked by one
 * that is not done, changed within the look-back ($1 hours). Findings are a subset of them.
 */
const CANDIDATES = `
       from issue_blockers r
       join issues i on i.id = r.issue_id and i.company_id = r.company_id
       join issues b on b.id = r.blocker_id and b.company_id = r.company_id
      where i.hidden_at is null
        and i.status in ('todo', 'in_progress', 'in_review', 'blocked') and b.status <> 'done'
        and greatest(r.created_at, i.updated_at, b.updated_at) >= now() - make_interval(hours => $1)`;

/**
 * The routes' selection (perCompany.select): the companies with a candidate relation, for the
 * request's look-back. Called serving no company; reads the plugin's own tables only.
 */
export async function livenessCompanies(req: RouteRequest, ctx: WorkContext): Promise<string[]> {
  const { rows } = await ctx.db.query(`select distinct r.company_id ${CANDIDATES}`, [await lookbackOf(req, ctx)]);
  return rows.map((row) => String(row.company_id));
}

export function previewLivenessRecovery(req: RouteRequest, ctx: WorkContext) {
  return recoverFromRoute(req, ctx, false);
}

export function runLivenessRecovery(req: RouteRequest, ctx: WorkContext) {
  return recoverFromRoute(req, ctx, true);
}

/**
 * The scheduled job (perCompany, every 15 minutes): the same run with the default look-back,
 * only while the experimental setting enableIssueGraphLivenessAutoRecovery is on. It runs in
 * the job engine, never on the way to the server's start.
 */
export async function autoRecoverLiveness(ctx: WorkContext): Promise<void> {
  const settings = await ctx.instanceSettings.get('experimental');
  if (settings.enableIssueGraphLivenessAutoRecovery !== true || !ctx.invocation.companyId) return;
  await recover(ctx, ctx.invocation.companyId, defaultLookback(settings), true);
}

async function recoverFromRoute(req: RouteRequest, ctx: WorkContext, apply: boolean) {
  return recover(ctx, req.companyId, await lookbackOf(req, ctx), apply);
}

async function lookbackOf(req: RouteRequest, ctx: WorkContext): Promise<number> {
  const body = (req.body ?? {}) as { lookbackHours?: number };
  return body.lookbackHours ?? defaultLookback(await ctx.instanceSettings.get('experimental'));
}

function defaultLookback(settings: Record<string, unknown>): number {
  return Number(settings.issueGraphLivenessAutoRecoveryLookbackHours ?? 24);
}

async function recover(ctx: WorkContext, companyId: string | null, lookbackHours: number, apply: boolean) {
  const findings = companyId ? await findStalled(ctx, companyId, lookbackHours) : [];
  const keys = findings.map((f) => f.key);
  let existing = await existingEscalations(ctx, companyId, keys);
  if (apply && findings.some((f) => !existing.has(f.key))) {
    // Something to make: after the company's run lock, each statement sees what a run before this one committed.
    await takeRunLock(ctx, companyId!);
    existing = await existingEscalations(ctx, companyId, keys);
  }
  let created = 0;
  for (const finding of findings) {
    const escalation = existing.get(finding.key);
    if (escalation) {
      Object.assign(finding, { outcome: 'existing', escalationIssueId: escalation.id, escalationIdentifier: escalation.identifier });
    } else if (apply) {
      const issue = await escalate(ctx, finding);
      Object.assign(finding, { outcome: 'created', escalationIssueId: issue.id, escalationIdentifier: issue.identifier });
      created++;
    } else {
      created++;
    }
  }
  return {
    dryRun: !apply,
    lookbackHours,
    counts: { findings: findings.length, escalationsCreated: created, escalationsExisting: findings.length - created },
    findings,
  };
}

/**
 * A run of the company that has escalations to make waits here for one in progress (its
 * transaction) and then goes on: the escalations that run made are then found as existing,
 * none is made twice. A run that finds every escalation made already takes no lock.
 */
async function takeRunLock(ctx: WorkContext, companyId: string): Promise<void> {
  await ctx.db.query(
    `insert into liveness_runs (company_id) values ($1) on conflict (company_id) do update set last_run_at = now()`, [companyId]);
}

async function findStalled(ctx: WorkContext, companyId: string, lookbackHours: number): Promise<Finding[]> {
  const { rows } = await ctx.db.query(
    `select i.id as issue_id, i.identifier as issue_identifier, b.id as blocker_id, b.identifier as blocker_identifier,
            b.status as blocker_status, b.assignee_agent_id as blocker_agent, b.assignee_user_id as blocker_user
       ${CANDIDATES} and r.company_id = $2 and i.company_id = $2 and b.company_id = $2
      order by i.created_at, i.id, b.created_at, b.id`, [lookbackHours, companyId]);
  // Only a company with candidates needs its agents (the owner of each finding).
  if (rows.length === 0) return [];
  const agents = new Map((await ctx.agents.list()).map((agent) => [String(agent.id), agent]));
  const findings: Finding[] = [];
  for (const row of rows) {
    const kind = classify(row, agents);
    if (!kind) continue;
    const blockerAgent = row.blocker_agent ? String(row.blocker_agent) : null;
    findings.push({
      key: `${kind}:${row.issue_id}:${row.blocker_id}`, kind, companyId,
      issueId: String(row.issue_id), issueIdentifier: String(row.issue_identifier),
      blockerIssueId: String(row.blocker_id), blockerIdentifier: String(row.blocker_identifier),
      blockerAssigneeAgentId: blockerAgent, ownerAgentId: ownerFor(blockerAgent, agents),
      escalationIssueId: null, escalationIdentifier: null, outcome: 'would_create',
    });
  }
  return findings;
}

function classify(row: Row, agents: Map<string, Record<string, unknown>>): FindingKind | null {
  if (row.blocker_status === 'cancelled') return 'blocked_by_cancelled_issue';
  if (!row.blocker_agent && !row.blocker_user) return 'blocked_by_unassigned_issue';
  if (row.blocker_status === 'backlog') return 'blocked_by_backlog_issue';
  if (row.blocker_agent && !invokable(agents.get(String(row.blocker_agent)))) return 'blocked_by_uninvokable_assignee';
  return null;
}

function invokable(agent: Record<string, unknown> | undefined): boolean {
  return agent !== undefined && !UNINVOKABLE.has(String(agent.status));
}

/** The blocker's assignee if it can run, else the first up its reporting chain that can, else the root agent. */
function ownerFor(start: string | null, agents: Map<string, Record<string, unknown>>): string | null {
  const seen = new Set<string>();
  for (let id = start; id && !seen.has(id); id = (agents.get(id)?.reportsTo as string | null | undefined) ?? null) {
    seen.add(id);
    if (invokable(agents.get(id))) return id;
  }
  const roots = [...agents.values()].filter((agent) => !agent.reportsTo && invokable(agent));
  const root = roots.find((agent) => agent.role === 'ceo') ?? roots[0];
  return root ? String(root.id) : null;
}

async function existingEscalations(ctx: WorkContext, companyId: string | null, keys: string[]): Promise<Map<string, { id: string; identifier: string }>> {
  if (!companyId || keys.length === 0) return new Map();
  const { rows } = await ctx.db.query(
    `select id, identifier, origin_id from issues where company_id = $1 and origin_kind = $2 and origin_id = any(${list(3, 'text')})`,
    [companyId, ORIGIN, keys]);
  return new Map(rows.map((row) => [String(row.origin_id), { id: String(row.id), identifier: String(row.identifier) }]));
}

async function escalate(ctx: WorkContext, finding: Finding): Promise<{ id: string; identifier: string }> {
  const row = await insertIssueRow(ctx, finding.companyId, {
    title: `Unblock ${finding.issueIdentifier}: ${REASONS[finding.kind]} (${finding.blockerIdentifier})`,
    description: [
      `${finding.issueIdentifier} is stalled behind ${finding.blockerIdentifier}: ${REASONS[finding.kind]}.`,
      '',
      `Finding: ${finding.kind}. Get ${finding.blockerIdentifier} moving (assign it, take it out of the backlog, bring its agent back),`,
      `or remove it from ${finding.issueIdentifier}'s blockers if it no longer applies.`,
    ].join('\n'),
    status: 'todo', priority: 'high', assigneeAgentId: finding.ownerAgentId,
  }, { kind: ORIGIN, id: finding.key });
  const issue = issueJson(row, []);
  await announceCreated(ctx, issue, { liveness: { finding: finding.kind, issueId: finding.issueId, blockerIssueId: finding.blockerIssueId } });
  return { id: String(issue.id), identifier: String(issue.identifier) };
}
