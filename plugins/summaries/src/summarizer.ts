import type { RouteRequest } from '@keel/sdk/plugin';
import type { Row, SummariesContext } from './context.ts';
import { assertSummariesEnabled } from './selector.ts';

export type SummarizerStatus = 'not_provisioned' | 'pending_approval' | 'paused' | 'terminated' | 'needs_setup' | 'ready';

/** The built-in agent's key under `managed.agents` in plugin.json. */
export const SUMMARIZER_KEY = 'summarizer';

const nonEmpty = (value: unknown) => typeof value === 'string' && value.trim().length > 0;

/** Whether the agent's adapter is set up enough to run: a command for a process agent, a URL for an http agent. */
function configured(adapterType: string, config: Row): boolean {
  if (adapterType === 'process') return nonEmpty(config.command);
  if (adapterType === 'http') return nonEmpty(config.url);
  return false;
}

/**
 * The company's built-in summarizer (the managed agent made for it at its first generate) and
 * whether it can take a generation now: `not_provisioned` before that, then made without
 * adapter configuration and paused (`managed`): `needs_setup` until the board configures it with
 * the ordinary agent routes (PATCH /api/agents/{id}), then `paused` until the board resumes it.
 */
export async function summarizerOf(ctx: SummariesContext): Promise<{ agentId: string | null; status: SummarizerStatus }> {
  const managed = await ctx.agents.getManaged(SUMMARIZER_KEY);
  if (!managed) return { agentId: null, status: 'not_provisioned' };
  const agentId = String(managed.id);
  const agent = await ctx.agents.getConfig(agentId);
  if (!agent) return { agentId: null, status: 'not_provisioned' };
  if (agent.status === 'pending_approval' || agent.status === 'terminated') return { agentId, status: agent.status };
  // What the board must do first: set it up (it is made paused and unconfigured), then resume it.
  if (!configured(agent.adapterType, agent.adapterConfig)) return { agentId, status: 'needs_setup' };
  return { agentId, status: agent.status === 'paused' ? 'paused' : 'ready' };
}

export async function getSummarizer(_req: RouteRequest, ctx: SummariesContext) {
  await assertSummariesEnabled(ctx);
  return summarizerOf(ctx);
}
