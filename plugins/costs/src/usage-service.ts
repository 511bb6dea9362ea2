import { allOf, PluginError, type RouteRequest } from '@keel/sdk/plugin';
import type { CostsContext } from './context.ts';
import { acceptCostEvents, type CostSource } from './cost-events.ts';
import { budgetAllowance } from './allowance.ts';

interface UsageInput {
  /** runId, issueId and projectId may be left out (an agent's own call outside a run; no issue, no project). */
  agentId: string; runId?: string | null; issueId?: string | null; projectId?: string | null;
  provider: string; model: string; biller: string; billingType: string;
  inputTokens: number; cachedInputTokens: number; outputTokens: number; costCents: number; occurredAt: string;
  /** Who measured the usage (default `adapter`: the runtime read it from a tool's output). */
  source?: CostSource;
}
/** The plugins whose proxied calls are the `gateway` source, unless the operator's config names others. */
const GATEWAY_PLUGINS = ['model-gateway'];

/**
 * `gateway` spend is what Keel measured itself, and reports show it apart from what agents
 * claim: only a gateway plugin (config `gatewayPlugins`) may record it, judged by the caller
 * the kernel names, so no other consumer of this service can dress a claimed figure up as
 * measured.
 */
function assertSourceOfCaller(source: CostSource | undefined, ctx: CostsContext): void {
  if (source !== 'gateway') return;
  const allowed = Array.isArray(ctx.config.gatewayPlugins) ? ctx.config.gatewayPlugins as string[] : GATEWAY_PLUGINS;
  const caller = ctx.invocation.caller?.plugin;
  if (!caller || !allowed.includes(caller)) {
    throw new PluginError(403, 'source_not_allowed', `Only a gateway plugin (${allowed.join(', ') || 'none configured'}) records spend with source gateway`, { source });
  }
}

type Scope = { scopeType: 'company' | 'agent' | 'project'; scopeId: string };

/**
 * The `record-usage` service: a usage report of a running agent (the agent runtime meters
 * them as they stream) becomes a cost event at once, by the same path as the cost-event route:
 * attributed to the agent, run (its source), issue and project; rollups, running totals and
 * budgets evaluated in the same transaction, a crossed hard stop pausing its scope. A report
 * only adds spend (costs are non-negative and nothing is ever subtracted). The caller's
 * idempotency key becomes the event's, so a report delivered twice is stored once.
 * Answers the event's id and the hard stops now open on the run's scopes.
 */
export async function recordUsageService(input: unknown, ctx: CostsContext) {
  const usage = input as UsageInput;
  assertSourceOfCaller(usage.source, ctx);
  const key = ctx.invocation.idempotencyKey;
  const request: RouteRequest = {
    params: {}, query: {}, companyId: ctx.invocation.companyId,
    headers: key ? { 'idempotency-key': `usage:${key}`.slice(0, 255) } : {},
    body: {
      agentId: usage.agentId, provider: usage.provider, model: usage.model, biller: usage.biller, billingType: usage.billingType,
      costCents: usage.costCents, occurredAt: usage.occurredAt, issueId: usage.issueId ?? null, projectId: usage.projectId ?? null, heartbeatRunId: usage.runId ?? null,
      inputTokens: usage.inputTokens, cachedInputTokens: usage.cachedInputTokens, outputTokens: usage.outputTokens,
    },
  };
  const [answer] = await acceptCostEvents([{ request, ctx, source: usage.source ?? 'adapter' }], ctx);
  if (answer instanceof Error) throw answer;
  const replayed = typeof answer === 'object' && answer !== null && '$response' in answer;
  const event = (replayed ? (answer as { $response: { body: { id: string } } }).$response.body : answer) as { id: string };
  return { costEventId: event.id, duplicate: replayed, stopped: await hardStops(ctx, usage.agentId, usage.projectId ?? null) };
}

interface UsageBatch {
  agentId: string; runId: string; issueId?: string | null; projectId?: string | null; source?: CostSource;
  /** `billingCode`: the runtime marks usage in flight when its run was stopped (`in_flight_at_stop`). */
  reports: Array<Omit<UsageInput, 'agentId' | 'runId' | 'issueId' | 'projectId'> & { idempotencyKey: string; billingCode?: string | null }>;
}

/**
 * The `record-usages` service: several reports of one run in one step (the runtime hands over
 * every report of a batch of agent output at once), stored in order by the same path as
 * `record-usage`, each under its own idempotency key; budgets are evaluated as each event is
 * stored. Answers each report's event, then the hard stops now open on the run's scopes.
 */
export async function recordUsagesService(input: unknown, ctx: CostsContext) {
  const batch = input as UsageBatch;
  assertSourceOfCaller(batch.source, ctx);
  const calls = batch.reports.map((report) => ({
    ctx, source: batch.source ?? 'adapter',
    request: {
      params: {}, query: {}, companyId: ctx.invocation.companyId,
      headers: { 'idempotency-key': `usage:${report.idempotencyKey}`.slice(0, 255) },
      body: {
        agentId: batch.agentId, provider: report.provider, model: report.model, biller: report.biller, billingType: report.billingType,
        costCents: report.costCents, occurredAt: report.occurredAt, issueId: batch.issueId ?? null, projectId: batch.projectId ?? null,
        heartbeatRunId: batch.runId, inputTokens: report.inputTokens, cachedInputTokens: report.cachedInputTokens, outputTokens: report.outputTokens,
        billingCode: typeof report.billingCode === 'string' ? report.billingCode.slice(0, 100) : null,
      },
    } as RouteRequest,
  }));
  const answers = await acceptCostEvents(calls, ctx);
  const results = answers.map((answer) => {
    if (answer instanceof Error) throw answer;
    const replayed = typeof answer === 'object' && answer !== null && '$response' in answer;
    const event = (replayed ? (answer as { $response: { body: { id: string } } }).$response.body : answer) as { id: string };
    return { costEventId: event.id, duplicate: replayed };
  });
  return { results, stopped: await hardStops(ctx, batch.agentId, batch.projectId ?? null) };
}

/**
 * The `budget-blocks` service: the open hard stops of the calling company, one of its agents
 * and a project; the budget left before the nearest hard stop of those scopes; and the pause,
 * if any, that keeps the agent from working (allowance.ts).
 */
export async function budgetBlocksService(input: unknown, ctx: CostsContext) {
  const { agentId, projectId } = input as { agentId: string; projectId?: string | null };
  // Asked before every gateway call: the stops and the allowance are read at once.
  const stops = hardStops(ctx, agentId.toLowerCase(), projectId?.toLowerCase() ?? null);
  const allowance = budgetAllowance(ctx, agentId.toLowerCase(), projectId?.toLowerCase() ?? null, stops);
  const [blocks, rest] = await allOf([stops, allowance]);
  return { blocks, ...rest };
}

async function hardStops(ctx: CostsContext, agentId: string, projectId: string | null): Promise<Scope[]> {
  const companyId = ctx.invocation.companyId;
  const { rows } = await ctx.db.query(
    `select distinct scope_type, scope_id from budget_incidents
      where company_id = $1 and status = 'open' and threshold_type = 'hard'
        and ((scope_type = 'company' and scope_id = $1) or (scope_type = 'agent' and scope_id = $2) or (scope_type = 'project' and scope_id = $3))
      order by scope_type, scope_id`,
    [companyId, agentId, projectId]);
  return rows.map((row) => ({ scopeType: row.scope_type as Scope['scopeType'], scopeId: String(row.scope_id) }));
}
