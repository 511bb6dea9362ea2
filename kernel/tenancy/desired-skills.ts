import type { Context } from 'koa';
import type { Actor } from '../auth/actor.ts';
import type { KernelServices } from '../services.ts';
import { isPlainObject, readDesiredSkills, SKILL_SYNC_KEY } from './agent-config.ts';
import type { CreateAgentInput } from './agent-input.ts';

/**
 * The desiredSkills of a create, hire or update as they will be stored: the plugin answering
 * the kernel point `agent.desired-skills` (the skills plugin) resolves the references to
 * canonical keys with the required ones added, or refuses them, before anything is written.
 * With no plugin answering, the list is stored as given.
 */
export async function resolveDesiredSkills(ctx: Context, kernel: KernelServices, request: {
  companyId: string; desiredSkills: string[] | undefined; adapterType: string; agentId: string | null;
}): Promise<string[] | undefined> {
  if (request.desiredSkills === undefined) return undefined;
  const answer = await kernel.points.consult('agent.desired-skills', { companyId: request.companyId, actor: ctx.state.actor as Actor }, {
    desiredSkills: request.desiredSkills, adapterType: request.adapterType, agentId: request.agentId,
  });
  return answer ? answer.desiredSkills : request.desiredSkills;
}

/** What a create or hire asks for: desiredSkills, else a list written straight into adapterConfig's slot (resolved all the same). */
export function requestedSkills(body: CreateAgentInput): string[] | undefined {
  if (body.desiredSkills !== undefined) return body.desiredSkills;
  const config = body.adapterConfig ?? {};
  return isPlainObject(config[SKILL_SYNC_KEY]) ? readDesiredSkills(config) : undefined;
}
