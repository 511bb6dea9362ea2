import { PluginError } from '@keel/sdk/plugin';
import type { AgentConfigView } from '@keel/sdk/plugin';
import { runnable, unavailableMessage, type RuntimeContext } from './context.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NOT_INVOKABLE = new Set(['terminated', 'pending_approval', 'paused']);

export interface IssueFacts { exists: boolean; projectId: string | null; status: string | null; assigneeAgentId: string | null; projectPaused: boolean; projectPauseReason: string | null }
interface BudgetBlock { scopeType: 'company' | 'agent' | 'project'; scopeId: string }

/** The issue a wakeup payload binds the run to: an issue of the agent's own company, else 422. */
export async function boundIssue(ctx: RuntimeContext, payload: Record<string, unknown>): Promise<{ issueId: string; facts: IssueFacts } | null> {
  if (!Object.hasOwn(payload, 'issueId') || payload.issueId === null) return null;
  const issueId = payload.issueId;
  if (typeof issueId !== 'string' || !UUID.test(issueId)) {
    throw new PluginError(422, 'invalid_issue', 'payload.issueId must be the id of an issue of the agent\'s company', { field: 'payload.issueId' });
  }
  const facts = await ctx.services.call<IssueFacts>('work', 'issue', { issueId: issueId.toLowerCase() });
  if (!facts.exists) {
    throw new PluginError(422, 'invalid_issue', 'payload.issueId names no issue of the agent\'s company', { field: 'payload.issueId', issueId });
  }
  return { issueId: issueId.toLowerCase(), facts };
}

/**
 * Whether the agent may be woken now; each refusal is a 409 that names its scope and writes
 * nothing. A company that is not active, then an agent that is terminated, pending approval or
 * paused, then a paused project: a pause that a budget hard stop holds answers `budget_blocked`
 * (the board can resume a scope over its stop, so a stop counts while its scope is paused).
 * Last, an adapter this instance cannot run. Checked again just before the start (dispatch.ts),
 * and the executor checks the agent and company once more before the process starts.
 */
export async function assertWakeable(ctx: RuntimeContext, agent: AgentConfigView, projectId: string | null, issue: IssueFacts | null): Promise<void> {
  // The costs plugin is asked only where a stop could be what blocks (a paused company or agent,
  // a project): an active agent's wake without a project, every heartbeat, costs no call of it.
  let blocks: BudgetBlock[] | null = null;
  const blocked = async (scopeType: BudgetBlock['scopeType'], scopeId: string | null) => {
    blocks ??= (await ctx.services.call<{ blocks: BudgetBlock[] }>('costs', 'budget-blocks', { agentId: agent.agentId, projectId })).blocks;
    if (!blocks.some((block) => block.scopeType === scopeType)) return;
    throw new PluginError(409, 'budget_blocked', `A budget hard stop of the ${scopeType} blocks new work until its budget is raised`, { scopeType, scopeId });
  };
  const companyId = ctx.invocation.companyId!;
  const company = await ctx.companies.get(companyId);
  if (company && company.status !== 'active') {
    if (company.status === 'paused') await blocked('company', companyId);
    throw new PluginError(409, 'company_not_active', `The company is ${String(company.status)}: its agents cannot be woken`, { scopeType: 'company', scopeId: companyId, status: company.status });
  }
  if (NOT_INVOKABLE.has(agent.status)) {
    if (agent.status === 'paused') await blocked('agent', agent.agentId);
    throw new PluginError(409, 'agent_not_invokable', `The agent is ${agent.status}: it cannot be woken`, { scopeType: 'agent', scopeId: agent.agentId, status: agent.status });
  }
  if (projectId) await blocked('project', projectId);
  if (issue?.projectPaused) {
    throw new PluginError(409, 'project_paused', `The issue's project is paused (${issue.projectPauseReason}): it takes no new work`, { scopeType: 'project', scopeId: projectId, pauseReason: issue.projectPauseReason });
  }
  if (!(await runnable(ctx, agent.adapterType))) {
    throw new PluginError(409, 'adapter_unavailable', unavailableMessage(agent.adapterType), { adapterType: agent.adapterType });
  }
}

/** The agent's masked configuration; 404 for an agent of no company the call serves. */
export async function agentConfig(ctx: RuntimeContext, agentId: string): Promise<AgentConfigView> {
  const agent = await ctx.agents.getConfig(agentId);
  if (!agent) throw new PluginError(404, 'not_found', 'Agent not found');
  return agent;
}

/** `runtimeConfig.heartbeat.maxConcurrentRuns` (or top-level `maxConcurrentRuns`), 1-20, default 1. */
export function maxConcurrentRuns(agent: AgentConfigView): number {
  const heartbeat = agent.runtimeConfig.heartbeat as Record<string, unknown> | undefined;
  const value = heartbeat?.maxConcurrentRuns ?? agent.runtimeConfig.maxConcurrentRuns;
  return typeof value === 'number' && Number.isInteger(value) ? Math.min(Math.max(value, 1), 20) : 1;
}
