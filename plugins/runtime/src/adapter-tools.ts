import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { agentConfig } from './admission.ts';
import { contributorOf, type RuntimeContext } from './context.ts';

/**
 * The routes an adapter answers itself, through the plugin that contributes the agent's type:
 * `POST /api/agents/{agentId}/alpha-login` (a vendor login flow, for alpha_local) and
 * `POST /api/agents/{agentId}/adapter-test` (the environment test). The runtime checks who asks
 * and which plugin answers; the contributor's `adapter-login` / `adapter-test` service (a
 * contract of the runtime) does the work.
 */
async function boardOnly(ctx: RuntimeContext, what: string): Promise<void> {
  const actor = await ctx.principals.actor();
  if (actor.type !== 'board') throw new PluginError(403, 'board_only', `Only board operators can ${what}.`);
}

/**
 * The login flow is the board's or the agent's own (the spec's BA): board actors, the agent
 * itself, and agents of the company holding `agents:create` (or the CEO role), as for an agent's
 * instructions. Its answer holds no secret: the login state and the next steps.
 */
async function mayLogIn(ctx: RuntimeContext, agentId: string): Promise<void> {
  const actor = await ctx.principals.actor(['agents:create']);
  if (actor.type === 'board') return;
  if (actor.type === 'agent' && (actor.id === agentId || actor.role === 'ceo' || actor.grants.some((grant) => grant.permissionKey === 'agents:create' && grant.companyWide))) return;
  throw new PluginError(403, 'permission_denied', "Missing permission: another agent's login needs the agents:create grant", { permission: 'agents:create' });
}

export async function alphaLoginRoute(req: RouteRequest, ctx: RuntimeContext) {
  const agent = await agentConfig(ctx, req.params.agentId!);
  if (agent.adapterType !== 'alpha_local') {
    throw new PluginError(422, 'login_not_supported', `The adapter ${agent.adapterType} has no login flow`, { adapterType: agent.adapterType });
  }
  await mayLogIn(ctx, agent.agentId);
  const contributor = await contributorOf(ctx, agent.adapterType);
  if (!contributor) {
    throw new PluginError(409, 'adapter_unavailable', 'This instance cannot run the adapter alpha_local, so it has no login flow to start; an operator enables the coding-agents plugin', { adapterType: agent.adapterType });
  }
  return ctx.services.call(contributor, 'adapter-login', { agentId: agent.agentId });
}

export async function adapterTestRoute(req: RouteRequest, ctx: RuntimeContext) {
  const agent = await agentConfig(ctx, req.params.agentId!);
  await boardOnly(ctx, "test an agent's adapter");
  const contributor = await contributorOf(ctx, agent.adapterType);
  if (!contributor) {
    throw new PluginError(422, 'adapter_test_not_supported', `The adapter ${agent.adapterType} has no environment test on this instance`, { adapterType: agent.adapterType });
  }
  return ctx.services.call(contributor, 'adapter-test', { agentId: agent.agentId });
}
