import { KeelError, notFound } from '../../http/errors.ts';
import { toAgentJson, type AgentRow } from '../../tenancy/agents.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from './scope.ts';
import type { BrokeredCall, KernelCapability } from './types.ts';

const PAUSABLE = new Set(['active', 'idle', 'running', 'error']);

async function changeStatus(call: BrokeredCall, to: 'paused' | 'idle', reason: string | null) {
  const agentId = uuidArg(call.args[0], 'agentId');
  const { kernel } = call;
  return kernel.db.transaction(async (tx) => {
    const agent = await tx.maybeOne(`select * from agents where id = ? and ${OF_CALL_COMPANY} for update`, [agentId, callCompany(call)]);
    if (!agent) throw notFound('Agent not found');
    const from = agent.status as string;
    const applies = to === 'paused' ? PAUSABLE.has(from) : from === 'paused';
    if (!applies) return { changed: false, status: from };
    await tx.exec(
      `update agents set status = ?, pause_reason = ?, paused_at = case when ? = 'paused' then now() else null end, updated_at = now() where id = ?`,
      [to, to === 'paused' ? reason : null, to, agentId]);
    const actor = { actorType: 'system' as const, actorId: `plugin:${call.plugin}` };
    await kernel.activity.record(tx, {
      companyId: agent.company_id, ...actor, agentId, runId: call.info.runId,
      action: to === 'paused' ? 'agent.paused' : 'agent.resumed', entityType: 'agent', entityId: agentId,
      details: { from, to, reason, plugin: call.plugin, onBehalfOf: call.info.actor },
    });
    await kernel.events.emit(tx, 'agent.status_changed', { companyId: agent.company_id, agentId, from, to, reason, actor });
    return { changed: true, status: to };
  });
}

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
    pause: {
      run: async (call) => {
        const reason = call.args[1];
        if (typeof reason !== 'string' || reason.length === 0 || reason.length > 200) throw new KeelError(400, 'invalid_arguments', 'pause needs a reason of 1-200 characters');
        const result = await changeStatus(call, 'paused', reason);
        return { paused: result.changed || result.status === 'paused', status: result.status };
      },
    },
    resume: {
      run: async (call) => {
        const result = await changeStatus(call, 'idle', null);
        return { resumed: result.changed, status: result.status };
      },
    },
  },
};
