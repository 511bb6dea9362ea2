import type { RouteRequest } from '@keel/sdk/plugin';
import type { CostsContext } from './context.ts';
import { measures, SUMMED } from './spend-source.ts';

/**
 * The spend of given runs, from their cost events (every source: what a tool's output reported,
 * what the model gateway metered, what a run server or the agent itself reported). Answers one
 * row per asked run, in the order asked, zeros for a run without events; each with its split by
 * source, largest first. Runs are found by their id within the caller's company only.
 */
export async function byRun(req: RouteRequest, ctx: CostsContext) {
  const runIds = [...new Set(String(req.query.runIds ?? '').toLowerCase().split(',').filter(Boolean))];
  const { rows } = await ctx.db.query(
    `select heartbeat_run_id::text as run_id, source, ${SUMMED.replace(/sum\(event_count\)/, 'count(*)')}
       from (select heartbeat_run_id, source, cost_cents, coalesce(input_tokens, 0) as input_tokens,
                    coalesce(cached_input_tokens, 0) as cached_input_tokens, coalesce(output_tokens, 0) as output_tokens
               from cost_events where company_id = $1 and heartbeat_run_id = any(string_to_array($2, ',')::uuid[])) e
      group by heartbeat_run_id, source order by cost_cents desc, source`,
    // The ids travel as one text parameter: an array parameter does not reach PostgreSQL as an array through the plugin's database bridge.
    [req.companyId, runIds.join(',')]);
  return runIds.map((runId) => {
    const bySource = rows.filter((row) => row.run_id === runId).map((row) => ({ source: String(row.source), ...measures(row) }));
    const total = bySource.reduce((sum, row) => ({
      spendCents: sum.spendCents + row.spendCents, inputTokens: sum.inputTokens + row.inputTokens,
      cachedInputTokens: sum.cachedInputTokens + row.cachedInputTokens, outputTokens: sum.outputTokens + row.outputTokens, eventCount: sum.eventCount + row.eventCount,
    }), { spendCents: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, eventCount: 0 });
    return { runId, ...total, bySource };
  });
}
