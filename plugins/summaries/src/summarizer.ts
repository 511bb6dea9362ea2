import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import type { Row, SummariesContext } from './context.ts';
import { assertSummariesEnabled } from './selector.ts';

export type SummarizerStatus = 'not_provisioned' | 'pending_approval' | 'paused' | 'terminated' | 'needs_setup' | 'ready';

const nonEmpty = (value: unknown) => typeof value === 'string' && value.trim().length > 0;

/** Whether the agent's adapter is set up enough to run: a command for a process agent, a URL for an http agent. */
function configured(adapterType: string, config: Row): boolean {
  if (adapterType === 'process') return nonEmpty(config.command);
  if (adapterType === 'http') return nonEmpty(config.url);
  return false;
}

/** The company's summarizer and whether it can take a generation now. */
export async function summarizerOf(ctx: SummariesContext, companyId: string): Promise<{ agentId: string | null; status: SummarizerStatus }> {
  const { rows } = await ctx.db.query('select agent_id from summarizers where company_id = $1', [companyId]);
  const agentId = (rows[0]?.agent_id as string | undefined) ?? null;
  if (!agentId) return { agentId: null, status: 'not_provisioned' };
  const agent = await ctx.agents.getConfig(agentId);
  if (!agent) return { agentId: null, status: 'not_provisioned' };
  if (agent.status === 'pending_approval' || agent.status === 'paused' || agent.status === 'terminated') return { agentId, status: agent.status };
  return { agentId, status: configured(agent.adapterType, agent.adapterConfig) ? 'ready' : 'needs_setup' };
}

/** Board only; designating needs `agents:create` in the company (instance authority skips the check). */
async function assertMayDesignate(ctx: SummariesContext): Promise<void> {
  const actor = await ctx.principals.actor(['agents:create']);
  if (actor.type !== 'board') throw new PluginError(403, 'board_only', 'Only board operators can choose the summarizer.');
  if (!actor.instanceAuthority && !actor.grants.some((grant) => grant.permissionKey === 'agents:create' && grant.companyWide)) {
    throw new PluginError(403, 'missing_permission', 'Missing permission: agents:create');
  }
}

export async function getSummarizer(req: RouteRequest, ctx: SummariesContext) {
  await assertSummariesEnabled(ctx);
  return summarizerOf(ctx, req.companyId!);
}

/**
 * Makes an agent of the company its summarizer: the one agent that generation tasks are assigned
 * to and that may write summaries (from its run of the task). A later designation replaces it.
 */
export async function putSummarizer(req: RouteRequest, ctx: SummariesContext) {
  await assertSummariesEnabled(ctx);
  await assertMayDesignate(ctx);
  const { agentId } = req.body as { agentId: string };
  const agent = await ctx.agents.get(agentId);
  if (!agent) throw new PluginError(422, 'invalid_agent', 'agentId names no agent of the company', { field: 'agentId' });
  const companyId = req.companyId!;
  const { rows } = await ctx.db.query('select agent_id from summarizers where company_id = $1 for update', [companyId]);
  const previous = (rows[0]?.agent_id as string | undefined) ?? null;
  await ctx.db.query(
    `insert into summarizers (company_id, agent_id, designated_by_user_id) values ($1, $2, $3)
     on conflict (company_id) do update set agent_id = excluded.agent_id, designated_by_user_id = excluded.designated_by_user_id, updated_at = now()`,
    [companyId, agentId, ctx.invocation.actor.id]);
  await ctx.activity.record({ action: 'summarizer.designated', entityType: 'agent', entityId: agentId, details: { previousAgentId: previous } });
  return summarizerOf(ctx, companyId);
}
