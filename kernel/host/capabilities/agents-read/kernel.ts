import { agentsRead as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import { maskConfig } from '../../../tenancy/agent-config.ts';
import { toAgentJson, type AgentRow } from '../../../tenancy/agents.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';
import { AGENT_WITH_SPEND } from '../../../tenancy/month-spend.ts';

/** `ctx.agents` reads (agents.read): the call's company's agents, their configuration redacted. */
const agentsRead: KernelCapability<'db'> = {
  methods: {
    get: {
      run: async (call) => {
        const agentId = uuidArg(call.args[0], 'agentId');
        const row = await call.kernel.db.maybeOne<AgentRow>(`select ${AGENT_WITH_SPEND} from agents where id = ? and ${OF_CALL_COMPANY}`, [agentId, callCompany(call)]);
        if (!row) return null;
        // Configuration stays with the kernel: plugins see the redacted view.
        return toAgentJson(row, { redacted: true });
      },
    },
    list: {
      run: async (call) => {
        // Only the agents of the company the call serves.
        const companyId = callCompany(call);
        const rows = await call.kernel.db.query(`select ${AGENT_WITH_SPEND} from agents where company_id = ? order by created_at, id`, [companyId]);
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
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['db'] }, serves: { agents: agentsRead.methods } });
