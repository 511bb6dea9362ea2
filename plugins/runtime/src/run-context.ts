import type { RuntimeContext } from './context.ts';

/**
 * The `run-context` service: a run of the calling company (the kernel attaches the company;
 * another company's run is not found, like an unknown one), with the issue and project it
 * works on and its status. The model gateway attributes a provider call with it, and refuses
 * the calls of a run that has ended. The run the kernel opens for an environment test whose tool
 * calls a model through the gateway (invocation source `adapter_test`, ctx.executions.probe) is
 * only the ledger's: it is answered from there, with no issue or project. So is a timer run
 * whose heartbeat (or routine) job is starting it: the job stores the run and starts its process
 * in one transaction, and until that commits the run is only in the ledger; a timer wake names
 * no issue or project.
 */
export async function runContextService(input: unknown, ctx: RuntimeContext) {
  const { runId } = input as { runId: string };
  const { rows } = await ctx.db.query(
    'select id::text as id, agent_id::text as agent_id, issue_id::text as issue_id, project_id::text as project_id, status from runs where id = $1 and company_id = $2',
    [runId.toLowerCase(), ctx.invocation.companyId]);
  const run = rows[0];
  if (!run) return ledgerOnlyRun(ctx, runId);
  return { runId: String(run.id), agentId: String(run.agent_id), issueId: (run.issue_id as string | null) ?? null, projectId: (run.project_id as string | null) ?? null, status: String(run.status) };
}

/**
 * A run this plugin has no row of (yet): the ledger's run of an environment test's probe, or a
 * timer run whose start has not committed. Any other run the ledger has is not this plugin's to answer.
 */
async function ledgerOnlyRun(ctx: RuntimeContext, runId: string) {
  const [ledger] = await ctx.runs.get([runId.toLowerCase()]);
  if (!ledger || (ledger.invocationSource !== 'adapter_test' && ledger.invocationSource !== 'timer')) return null;
  return { runId: ledger.runId, agentId: ledger.agentId, issueId: null, projectId: null, status: ledger.status };
}
