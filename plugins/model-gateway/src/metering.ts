import type { ProxyFinishedEvent } from '@keel/sdk/plugin';
import { isObject, type GatewayContext } from './context.ts';
import { addTokens } from './rate-limits.ts';
import { recordTest } from './test-call.ts';

interface CallReport {
  agentId: string; runId: string | null; issueId: string | null; projectId: string | null;
  providerId: string; providerName: string; kind: string; model: string;
}

/**
 * `proxy.finished` (at least once, to this plugin alone): the call's metered usage becomes a
 * cost event of the costs plugin (source `gateway`, idempotent by the call's id there), and its
 * tokens count towards the company's tokens per minute once (metered_calls, in this
 * transaction). The costs call comes first and commits on its own: a delivery that fails after
 * it is retried, finds the cost event already recorded and counts the tokens then.
 */
export async function onProxyFinished(event: ProxyFinishedEvent, ctx: GatewayContext): Promise<void> {
  const report = event.report;
  if (report.test === true) return recordTest(ctx, event);
  if (!isCallReport(report)) return;
  const { usage } = event;
  const tokens = usage.inputTokens + usage.cachedInputTokens + usage.cacheWriteTokens + usage.outputTokens;
  let costEventId: string | null = null;
  if (tokens > 0 || event.costCents > 0) {
    const recorded = await ctx.services.call<{ costEventId: string }>('costs', 'record-usage', {
      agentId: report.agentId, runId: report.runId, issueId: report.issueId, projectId: report.projectId,
      provider: report.providerName, biller: report.kind, billingType: 'metered_api', source: 'gateway',
      model: (event.model ?? report.model).slice(0, 200),
      // Cache writes are input the provider charges (at their own rate, in costCents).
      inputTokens: usage.inputTokens + usage.cacheWriteTokens, cachedInputTokens: usage.cachedInputTokens, outputTokens: usage.outputTokens,
      costCents: event.costCents, occurredAt: event.finishedAt,
    }, { idempotencyKey: event.callId });
    costEventId = recorded.costEventId;
  }
  const { rows } = await ctx.db.query(
    'insert into metered_calls (call_id, company_id, cost_event_id) values ($1, $2, $3) on conflict (call_id) do nothing returning call_id',
    [event.callId, event.companyId, costEventId]);
  if (rows.length > 0 && tokens > 0) await addTokens(ctx, event.companyId, tokens);
}

function isCallReport(report: Record<string, unknown>): report is Record<string, unknown> & CallReport {
  return typeof report.agentId === 'string' && (typeof report.runId === 'string' || report.runId === null) && typeof report.providerName === 'string'
    && typeof report.kind === 'string' && typeof report.model === 'string';
}
