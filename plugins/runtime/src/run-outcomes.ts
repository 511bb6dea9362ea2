import type { RuntimeContext } from './context.ts';
import { runJson } from './json.ts';
import { executionsOf } from './process-facts.ts';

/** The most runs one call answers (as many as ctx.runs.get takes). */
const MAX_RUNS = 200;

export interface RunOutcome { runId: string; usageJson: unknown; resultJson: unknown; logBytes: number | null }

/**
 * The `run-outcomes` service: what this plugin alone holds of the calling company's runs among
 * these ids (the kernel attaches the company; another company's run is left out like an unknown
 * one): the usage totals metered as the run's output arrived, its result, and the size of its
 * log. The run ledger holds a run's liveness only; the work plugin's `GET /api/issues/{id}/runs`
 * answers these fields from here. A run that never started a process has no log (null).
 */
export async function runOutcomesService(input: unknown, ctx: RuntimeContext): Promise<{ runs: RunOutcome[] }> {
  const ids = [...new Set((input as { runIds: string[] }).runIds.map((id) => id.toLowerCase()))].slice(0, MAX_RUNS);
  if (ids.length === 0) return { runs: [] };
  const { rows } = await ctx.db.query(
    `select * from runs where id in (select jsonb_array_elements_text($1::jsonb)::uuid) and company_id = $2`,
    // Arrays cross the sandbox boundary as JSON: the ids are bound as jsonb and unpacked.
    [JSON.stringify(ids), ctx.invocation.companyId]);
  // The log size is the execution's, as the heartbeat run shows it (process-facts.ts).
  const executions = await executionsOf(ctx, rows);
  return {
    runs: rows.map((row) => {
      const run = runJson(row, executions.get(String(row.execution_id)));
      return { runId: String(row.id), usageJson: run.usageJson, resultJson: run.resultJson, logBytes: row.execution_id ? run.logBytes : null };
    }),
  };
}
