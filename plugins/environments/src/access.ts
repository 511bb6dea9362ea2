import { PluginError } from '@keel/sdk/plugin';
import type { EnvironmentsContext } from './context.ts';

export const MANAGE_PERMISSION = 'environments:manage';

/**
 * Writes of environments, leases and execution workspaces: the host has checked company access
 * already (board members of the company, the company's agents). An agent must also hold
 * `environments:manage` company-wide; board callers with access to the company may manage.
 */
export async function assertMayManage(ctx: EnvironmentsContext): Promise<void> {
  const facts = await ctx.principals.actor([MANAGE_PERMISSION]);
  if (facts.type !== 'agent') return;
  if (facts.grants.some((grant) => grant.permissionKey === MANAGE_PERMISSION && grant.companyWide)) return;
  throw new PluginError(403, 'permission_denied', `Missing permission: ${MANAGE_PERMISSION}`);
}

/** Who did it, for recorded operations. */
export function actorOf(ctx: EnvironmentsContext): { type: string; id: string } {
  const actor = ctx.invocation.actor;
  return { type: actor.type, id: actor.agentId ?? actor.id };
}
