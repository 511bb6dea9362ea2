import { agentsManaged as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import { KeelError } from '../../../http/errors.ts';
import { toAgentJson, type AgentRow } from '../../../tenancy/agents.ts';
import { provisionOnDemand } from '../../managed-agents.ts';
import { callCompany, OF_CALL_COMPANY } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';
import { AGENT_WITH_SPEND } from '../../../tenancy/month-spend.ts';

/** `ctx.agents.getManaged/provisionManaged` (agents.managed): the agents this plugin manages, by its own key. */
const agentsManaged: KernelCapability<'activity' | 'db' | 'events'> = {
  methods: {
    getManaged: {
      run: async (call) => {
        const key = call.args[0];
        if (typeof key !== 'string') throw new KeelError(400, 'invalid_arguments', 'key must be a string');
        // The plugin is the one the kernel started this call for: it reaches its own managed agents only.
        const row = await call.kernel.db.maybeOne<AgentRow>(
          `select ${AGENT_WITH_SPEND} from agents where ${OF_CALL_COMPANY} and managed_by_plugin = ? and managed_key = ?`, [callCompany(call), call.plugin, key]);
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
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['activity', 'db', 'events'] }, serves: { agents: agentsManaged.methods } });
