import type { Context } from 'koa';
import type { Actor, AgentActor, BoardActor } from '../auth/actor.ts';
import { forbidden, unauthorized } from './errors.ts';

/** Route guards. Each reads the actor resolved for the request and throws the spec's status. */
export function actorOf(ctx: Context): Actor {
  return ctx.state.actor as Actor;
}

export function requireActor(ctx: Context): BoardActor | AgentActor {
  const actor = actorOf(ctx);
  if (actor.kind === 'anonymous') throw unauthorized();
  return actor;
}

export function requireBoard(ctx: Context): BoardActor {
  const actor = requireActor(ctx);
  if (actor.kind !== 'board') throw forbidden('Board access required', 'board_required');
  return actor;
}

export function requireAgent(ctx: Context): AgentActor {
  const actor = requireActor(ctx);
  if (actor.kind !== 'agent') throw forbidden('Agent authentication required', 'agent_required');
  return actor;
}

export function requireInstanceAdmin(ctx: Context): BoardActor {
  const actor = requireBoard(ctx);
  if (!actor.isInstanceAdmin && !actor.isLocalBoard) throw forbidden('Instance admin access required', 'instance_admin_required');
  return actor;
}

/** Whether the actor may reach the company at all (membership, own company, or local trust). */
export function canAccessCompany(actor: Actor, companyId: string): boolean {
  if (actor.kind === 'agent') return actor.companyId === companyId;
  if (actor.kind === 'board') return actor.isLocalBoard || actor.isInstanceAdmin || actor.companyIds.includes(companyId);
  return false;
}

export function assertCompanyAccess(ctx: Context, companyId: string): BoardActor | AgentActor {
  const actor = requireActor(ctx);
  if (!canAccessCompany(actor, companyId)) {
    throw forbidden(actor.kind === 'agent' ? 'Agent key cannot access another company' : 'User does not have access to this company', 'company_access_denied');
  }
  return actor;
}
