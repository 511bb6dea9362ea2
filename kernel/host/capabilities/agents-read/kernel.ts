import { KeelError } from '../../http/errors.ts';
import { isPlainObject, maskConfig, readDesiredSkills, withDesiredSkills } from '../../tenancy/agent-config.ts';
import { eventAgent, toAgentJson, type AgentRow } from '../../tenancy/agents.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from './scope.ts';
import type { BrokeredCall, KernelCapability } from './types.ts';
import { setInstructionKeys } from './agent-instructions.ts';
import { provisionOnDemand } from '../managed-agents.ts';

export const agentsCapability: KernelCapability = {
  methods: {
    get: {
      run: async (call) => {
        const agentId = uuidArg(call.args[0], 'agentId');
        const row = await call.kernel.db.maybeOne<AgentRow>(`select * from agents where id = ? and ${OF_CALL_COMPANY}`, [agentId, callCompany(call)]);
        if (!row) return null;
        // Configuration stays with the kernel: plugins see the redacted view.
        return toAgentJson(row, { redacted: true });
      },
    },
    list: {
      run: async (call) => {
        // Only the agents of the company the call serves.
        const companyId = callCompany(call);
        const rows = await call.kernel.db.query('select * from agents where company_id = ? order by created_at, id', [companyId]);
        return rows.map((row) => toAgentJson(row as never, { redacted: true }));
      },
    },
    getConfig: {
      run: async (call) => {
        const agentId = uuidArg(call.args[0], 'agentId');
        const row = await call.kernel.db.maybeOne<AgentRow>(`select * from agents where id = ? and ${OF_CALL_COMPANY}`, [agentId, callCompany(call)]);
        if (!row) return null;
        // Masked as the configuration route shows it to the board: secret references stay references, secret-looking values are redacted.
        const config = (value: unknown) => (value && typeof value === 'object' && !Array.isArray(value) ? maskConfig(value) : {});
        return { agentId: row.id, status: row.status, adapterType: row.adapter_type, adapterConfig: config(row.adapter_config), runtimeConfig: config(row.runtime_config) };
      },
    },
    getManaged: {
      run: async (call) => {
        const key = call.args[0];
        if (typeof key !== 'string') throw new KeelError(400, 'invalid_arguments', 'key must be a string');
        // The plugin is the one the kernel started this call for: it reaches its own managed agents only.
        const row = await call.kernel.db.maybeOne<AgentRow>(
          `select * from agents where ${OF_CALL_COMPANY} and managed_by_plugin = ? and managed_key = ?`, [callCompany(call), call.plugin, key]);
        return row ? toAgentJson(row, { redacted: true }) : null;
      },
    },
    provisionManaged: {
      run: async (call) => {
        const key = call.args[0];
        if (typeof key !== 'string') throw new KeelError(400, 'invalid_arguments', 'key must be a string');
        // Made for the plugin the kernel started this call for, in the call's company, and no other.
        const row = await provisionOnDemand(call.kernel, call.plugin, key, callCompany(call));
        return toAgentJson(row, { redacted: true });
      },
    },
    setDesiredSkills: { run: setDesiredSkills },
    setInstructionKeys: { run: setInstructionKeys },
  },
};

/**
 * agents.skills.write: the desired-skills slot of the agent's adapterConfig, written by the kernel
 * in its own transaction (agent row locked) with an `agent.updated` event naming the change.
 * Nothing else of the configuration changes; an unchanged list writes nothing.
 */
async function setDesiredSkills(call: BrokeredCall): Promise<{ desiredSkills: string[]; changed: boolean }> {
  const agentId = uuidArg(call.args[0], 'agentId');
  const requested = call.args[1];
  if (!Array.isArray(requested) || requested.some((key) => typeof key !== 'string')) throw new KeelError(400, 'invalid_arguments', 'desiredSkills must be an array of strings');
  const desiredSkills = [...new Set(requested as string[])];
  return call.kernel.db.transaction(async (tx) => {
    const before = await tx.maybeOne<AgentRow>(`select * from agents where id = ? and ${OF_CALL_COMPANY} for update`, [agentId, callCompany(call)]);
    if (!before) throw new KeelError(404, 'agent_not_found', 'Agent not found');
    const config = isPlainObject(before.adapter_config) ? before.adapter_config : {};
    if (JSON.stringify(readDesiredSkills(config)) === JSON.stringify(desiredSkills)) return { desiredSkills, changed: false };
    const next = withDesiredSkills(config, desiredSkills);
    const rows = await tx.query<AgentRow>('update agents set adapter_config = ?::jsonb, updated_at = now() where id = ? returning *', [JSON.stringify(next), agentId]);
    const after = rows[0]!;
    await call.kernel.events.emit(tx, 'agent.updated', {
      companyId: after.company_id, agentId: after.id, agent: eventAgent(after), changes: { desiredSkills },
      actor: { actorType: call.info.actor.type as 'agent' | 'user' | 'system', actorId: call.info.actor.id },
    });
    return { desiredSkills, changed: true };
  });
}
