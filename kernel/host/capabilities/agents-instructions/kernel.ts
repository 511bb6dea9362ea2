import { agentsInstructions as spec, INSTRUCTION_KEY } from '../../../../sdk/capabilities/kernel-data.ts';
import { KeelError } from '../../../http/errors.ts';
import { isPlainObject, maskConfig } from '../../../tenancy/agent-config.ts';
import { deepEqual, recordRevision } from '../../../tenancy/agent-config-revisions.ts';
import { eventAgent, type AgentRow } from '../../../tenancy/agents.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from '../scope.ts';
import type { BrokeredCall } from '../types.ts';
import { kernelUnit } from '../unit.ts';
import { AGENT_WITH_SPEND } from '../../../tenancy/month-spend.ts';

/**
 * `ctx.agents.setInstructionKeys` (agents.instructions): writes instruction keys of an agent's
 * adapter configuration, with a configuration revision (source `instructions`, authored by the
 * call's actor), an activity entry and `agent.updated`, in one transaction. Keys that decide
 * what runs are out of reach (INSTRUCTION_KEY), which is why such a revision is not one the
 * executor's approval check looks at (executions/start-checks.ts).
 */
export async function setInstructionKeys(call: BrokeredCall<'activity' | 'db' | 'events'>): Promise<{ adapterConfig: Record<string, unknown>; changed: boolean }> {
  const agentId = uuidArg(call.args[0], 'agentId');
  const values = call.args[1] as Record<string, string | null>;
  for (const [key, value] of Object.entries(values)) {
    if (!INSTRUCTION_KEY.test(key)) {
      throw new KeelError(400, 'invalid_arguments', `${JSON.stringify(key.slice(0, 100))} is not an instruction key: a key must contain "instructions" or "agentsMd"`);
    }
    if (typeof value === 'string' && value.includes('\0')) throw new KeelError(400, 'invalid_arguments', `${key} contains a NUL byte`);
  }
  const { db, activity, events } = call.kernel;
  const actor = call.info.actor;
  const userId = actor.type === 'user' ? actor.id : null;
  const actorAgentId = actor.type === 'agent' ? actor.agentId ?? actor.id : null;
  return db.transaction(async (tx) => {
    const before = await tx.maybeOne<AgentRow>(`select ${AGENT_WITH_SPEND} from agents where id = ? and ${OF_CALL_COMPANY} for update`, [agentId, callCompany(call)]);
    if (!before) throw new KeelError(404, 'not_found', 'Agent not found');
    const current = isPlainObject(before.adapter_config) ? before.adapter_config : {};
    const next: Record<string, unknown> = { ...current };
    for (const [key, value] of Object.entries(values)) {
      if (value === null) delete next[key];
      else next[key] = value;
    }
    if (deepEqual(current, next)) return { adapterConfig: maskConfig(current) as Record<string, unknown>, changed: false };
    const after = (await tx.query<AgentRow>(`update agents set adapter_config = ?::jsonb, updated_at = now() where id = ? returning ${AGENT_WITH_SPEND}`, [JSON.stringify(next), agentId]))[0]!;
    const revision = await recordRevision(tx, { agent: after, source: 'instructions', changedKeys: ['adapterConfig'], userId, agentId: actorAgentId });
    await activity.record(tx, {
      companyId: after.company_id, actorType: actor.type, actorId: actor.id, agentId: actorAgentId, runId: call.info.runId,
      action: 'agent.instructions_updated', entityType: 'agent', entityId: after.id,
      details: { keys: Object.keys(values), configRevision: revision.revision_number, plugin: call.plugin },
    });
    await events.emit(tx, 'agent.updated', {
      companyId: after.company_id, agentId: after.id, agent: eventAgent(after), changes: { adapterConfig: maskConfig(next, 'adapterConfig') },
      actor: { actorType: actor.type, actorId: actor.id },
    });
    return { adapterConfig: maskConfig(next) as Record<string, unknown>, changed: true };
  });
}

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['activity', 'db', 'events'] }, serves: { agents: { setInstructionKeys: { run: setInstructionKeys } } } });
