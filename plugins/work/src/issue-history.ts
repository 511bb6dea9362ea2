import type { PluginError, RouteRequest, RunSummary } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { issueSummaryJson } from './json.ts';
import { list } from './sql.ts';

/** The most activity entries one read of the log answers (activity.read's own bound). */
const MAX_ENTRIES = 1000;
/** The most runs an issue's run list answers (runs.read takes as many ids per call). */
const MAX_RUNS = 200;
/** What the runtime plugin alone holds of a run (its `run-outcomes` service). */
interface RunOutcome { runId: string; usageJson: unknown; resultJson: unknown; logBytes: number | null }
/** The runtime plugin is not enabled (or not running): its runs' outcomes are then unknown. */
const RUNTIME_ABSENT = new Set(['service_unavailable', 'service_not_found', 'plugin_unavailable']);

/** The issue's activity entries, newest first (the issue is named by uuid or identifier; the host resolved it). */
export async function issueActivity(req: RouteRequest, ctx: WorkContext) {
  const limit = typeof req.query.limit === 'number' ? req.query.limit : MAX_ENTRIES;
  return ctx.activity.list({ entityType: 'issue', entityId: req.params.issueId!, limit });
}

/**
 * The runs of the issue, newest first: the runs bound to it (their context snapshot in the run
 * ledger names it: a wakeup with `payload.issueId`), its checkout and execution runs, the runs
 * of its activity entries (the newest 1000) and of its comments, each once, as the run ledger
 * has them. At most 200; a run id the ledger does not know (an X-Service-Run-Id that named no
 * run, recorded before the kernel refused such headers) is left out. The ledger holds a run's
 * liveness; its usage, result and log size are the runtime's (`withOutcomes`).
 */
export async function issueRuns(req: RouteRequest, ctx: WorkContext) {
  const issueId = req.params.issueId!;
  const bound = await ctx.runs.withContext({ issueId });
  const { rows: [issue] } = await ctx.db.query('select checkout_run_id, execution_run_id from issues where id = $1 and company_id = $2', [issueId, req.companyId]);
  const ids = new Set<string>();
  for (const id of [issue?.execution_run_id, issue?.checkout_run_id]) if (id) ids.add(String(id));
  for (const entry of await ctx.activity.list({ entityType: 'issue', entityId: issueId, limit: MAX_ENTRIES })) if (entry.runId) ids.add(entry.runId);
  const { rows: comments } = await ctx.db.query(
    'select run_id::text as run_id from issue_comments where issue_id = $1 and run_id is not null group by run_id order by max(created_at) desc', [issueId]);
  for (const row of comments) ids.add(String(row.run_id));
  for (const run of bound) ids.delete(run.runId);
  const others = ids.size === 0 ? [] : await ctx.runs.get([...ids].slice(0, MAX_RUNS));
  // Both lists come newest first from the ledger; merged in the ledger's order (created, then id).
  const runs = [...bound, ...others]
    .sort((a, b) => (a.createdAt === b.createdAt ? b.runId.localeCompare(a.runId) : b.createdAt.localeCompare(a.createdAt)))
    .slice(0, MAX_RUNS);
  return withOutcomes(ctx, runs);
}

/**
 * The runs with what the runtime plugin holds of them (usage totals, result, log size), each
 * null for a run it has no row of (a run another plugin opened) or when it is not enabled.
 */
async function withOutcomes(ctx: WorkContext, runs: RunSummary[]) {
  const outcomes = new Map<string, RunOutcome>();
  if (runs.length > 0) {
    try {
      const answer = await ctx.services.call<{ runs: RunOutcome[] }>('runtime', 'run-outcomes', { runIds: runs.map((run) => run.runId) });
      for (const outcome of answer.runs) outcomes.set(outcome.runId, outcome);
    } catch (error) {
      if (!RUNTIME_ABSENT.has(String((error as PluginError).code))) throw error;
    }
  }
  return runs.map((run) => {
    const outcome = outcomes.get(run.runId);
    return {
      runId: run.runId, status: run.status, agentId: run.agentId, adapterType: run.adapterType, startedAt: run.startedAt,
      finishedAt: run.finishedAt, createdAt: run.createdAt, invocationSource: run.invocationSource,
      usageJson: outcome?.usageJson ?? null, resultJson: outcome?.resultJson ?? null, logBytes: outcome?.logBytes ?? null,
    };
  });
}

/**
 * The issues a run touched, as summaries, most recently updated first: those it holds checked
 * out or executes, those it commented on, and those its activity entries name. Hidden issues
 * are left out. An unknown run, or one of a company the caller cannot reach, reaches here
 * with no company (the host's runParam) and answers an empty list.
 */
export async function runIssues(req: RouteRequest, ctx: WorkContext) {
  if (!req.companyId) return [];
  const runId = req.params.runId!;
  const named = (await ctx.activity.list({ runId, entityType: 'issue', limit: MAX_ENTRIES })).map((entry) => entry.entityId);
  const { rows } = await ctx.db.query(
    `select i.* from issues i
      where i.company_id = $1 and i.hidden_at is null
        and (i.checkout_run_id = $2 or i.execution_run_id = $2 or i.id::text = any(${list(3, 'text')})
             or exists (select 1 from issue_comments c where c.issue_id = i.id and c.run_id = $2))
      order by i.updated_at desc, i.id desc`,
    [req.companyId, runId, [...new Set(named)]]);
  return rows.map(issueSummaryJson);
}
