import { agentsSkillsWrite as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import { KeelError } from '../../../http/errors.ts';
import { isPlainObject, readDesiredSkills, withDesiredSkills } from '../../../tenancy/agent-config.ts';
import { eventAgent, type AgentRow } from '../../../tenancy/agents.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from '../scope.ts';
import type { BrokeredCall } from '../types.ts';
import { kernelUnit } from '../unit.ts';
import { AGENT_WITH_SPEND } from '../../../tenancy/month-spend.ts';

/**
 * agents.skills.write: the desired-skills slot of the agent's adapterConfig, written by the kernel
 * in its own transaction (agent row locked) with an `agent.updated` event naming the change.
 * Nothing else of the configuration changes; an unchanged list writes nothing.
 */
async function setDesiredSkills(call: BrokeredCall<'db' | 'events'>): Promise<{ desiredSkills: string[]; changed: boolean }> {
  const agentId = uuidArg(call.args[0], 'agentId');
  const requested = call.args[1];
  if (!Array.isArray(requested) || requested.some((key) => typeof key !== 'string')) throw new KeelError(400, 'invalid_arguments', 'desiredSkills must be an array of strings');
  const desiredSkills = [...new Set(requested as string[])];
  return call.kernel.db.transaction(async (tx) => {
    const before = await tx.maybeOne<AgentRow>(`select ${AGENT_WITH_SPEND} from agents where id = ? and ${OF_CALL_COMPANY} for update`, [agentId, callCompany(call)]);
    if (!before) throw new KeelError(404, 'agent_not_found', 'Agent not found');
    const config = isPlainObject(before.adapter_config) ? before.adapter_config : {};
    if (JSON.stringify(readDesiredSkills(config)) === JSON.stringify(desiredSkills)) return { desiredSkills, changed: false };
    const next = withDesiredSkills(config, desiredSkills);
    const rows = await tx.query<AgentRow>(`update agents set adapter_config = ?::jsonb, updated_at = now() where id = ? returning ${AGENT_WITH_SPEND}`, [JSON.stringify(next), agentId]);
    const after = rows[0]!;
    await call.kernel.events.emit(tx, 'agent.updated', {
      companyId: after.company_id, agentId: after.id, agent: eventAgent(after), changes: { desiredSkills },
      actor: { actorType: call.info.actor.type as 'agent' | 'user' | 'system', actorId: call.info.actor.id },
    });
    return { desiredSkills, changed: true };
  });
}

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db', 'events'] }, serves: { agents: { setDesiredSkills: { run: setDesiredSkills } } } });
