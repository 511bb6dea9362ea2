import type { CodingAgentsContext, Row } from './context.ts';
import type { ToolUsage } from './tools/driver.ts';

const COUNTERS = ['inputTokens', 'cachedInputTokens', 'outputTokens'] as const;
const MAX_TOKENS = 1_000_000_000_000;

/** A count as the runtime accepts it (a non-negative integer within bounds), or null when the tool's figure is not one. */
const count = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= MAX_TOKENS ? Math.floor(value) : null);

/**
 * A tool's usage as the runtime's `service.usage` line: input is the uncached input (cache
 * writes are uncached input too), cached input the cache reads, the tool's own cost when it
 * reports one. Figures that are running totals over a session (`cumulative`) are metered as the
 * difference to what earlier reports of the same session recorded (table session_usage), so a
 * resumed session is never counted twice. Null when nothing new (or nothing valid) remains.
 * A run the model gateway served marks its lines `meteredBy: "gateway"` (docs/api/runtime.md).
 */
export async function usageLine(ctx: CodingAgentsContext, run: Row, sessionId: string | null, usage: ToolUsage): Promise<Record<string, unknown> | null> {
  const reported = {
    inputTokens: count((usage.inputTokens ?? 0) + (usage.cacheWriteTokens ?? 0)), cachedInputTokens: count(usage.cachedInputTokens ?? 0), outputTokens: count(usage.outputTokens ?? 0),
  };
  const costMicro = usage.costUsd === undefined ? null : count(Math.round(usage.costUsd * 1_000_000));
  if (COUNTERS.some((counter) => reported[counter] === null) || (usage.costUsd !== undefined && costMicro === null)) return null;
  let added = reported as Record<(typeof COUNTERS)[number], number>;
  let addedCostMicro = costMicro;
  if (usage.cumulative && sessionId) {
    await ctx.db.query(
      `insert into session_usage (company_id, agent_id, adapter_type, session_id) values ($1, $2, $3, $4) on conflict do nothing`,
      [run.company_id, run.agent_id, run.adapter_type, sessionId]);
    const { rows } = await ctx.db.query(
      'select * from session_usage where agent_id = $1 and adapter_type = $2 and session_id = $3 for update', [run.agent_id, run.adapter_type, sessionId]);
    const before = rows[0]!;
    added = {
      inputTokens: Math.max(0, added.inputTokens - Number(before.input_tokens)),
      cachedInputTokens: Math.max(0, added.cachedInputTokens - Number(before.cached_input_tokens)),
      outputTokens: Math.max(0, added.outputTokens - Number(before.output_tokens)),
    };
    if (costMicro !== null) addedCostMicro = Math.max(0, costMicro - Number(before.cost_micro_usd));
    await ctx.db.query(
      `update session_usage set input_tokens = greatest(input_tokens, $4), cached_input_tokens = greatest(cached_input_tokens, $5),
              output_tokens = greatest(output_tokens, $6), cost_micro_usd = greatest(cost_micro_usd, $7), updated_at = now()
        where agent_id = $1 and adapter_type = $2 and session_id = $3`,
      [run.agent_id, run.adapter_type, sessionId, reported.inputTokens, reported.cachedInputTokens, reported.outputTokens, costMicro ?? 0]);
    if (COUNTERS.every((counter) => added[counter] === 0) && !addedCostMicro) return null;
  }
  return {
    type: 'service.usage', provider: usage.provider, model: usage.model, billingType: usage.billingType, ...added,
    ...(addedCostMicro !== null ? { costUsd: addedCostMicro / 1_000_000 } : {}),
    // The model gateway served the run and metered the provider's own answers: the runtime keeps this report beside the run, uncharged.
    ...(run.gateway_provider_id ? { meteredBy: 'gateway' } : {}),
  };
}
