import { executionsWorkspace as spec } from '../../../../sdk/capabilities/workspace-processes.ts';
import type { WorkspaceProcessInput } from '../../../../sdk/capabilities/workspace-processes.ts';
import { workspaceProcessesOf, type WorkspaceCaller } from '../../../executions/workspace-processes.ts';
import { callCompany, uuidArg } from '../scope.ts';
import type { BrokeredCall, KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/**
 * `ctx.workspaceProcesses`: a workspace's services and commands, run by the executor tier
 * (kernel/executions/workspace-processes.ts). The registry checked the grant and the arguments;
 * the actor is the kernel's record of the invocation (a start or stop needs a board user with
 * access to the company), and a process is found only by the plugin that started it, in the
 * company the call serves.
 */
const caller = (call: BrokeredCall<'executions' | 'resolver'>): WorkspaceCaller => ({ plugin: call.plugin, companyId: callCompany(call), actor: call.info.actor });
const processes = (call: BrokeredCall<'executions' | 'resolver'>) => workspaceProcessesOf(call.kernel.executions, call.kernel.resolver);

const workspaceProcessesCapability: KernelCapability<'executions' | 'resolver'> = {
  methods: {
    start: { run: async (call) => processes(call).begin(caller(call), call.args[0] as WorkspaceProcessInput) },
    get: { run: async (call) => processes(call).get(caller(call), uuidArg(call.args[0], 'executionId')) },
    log: {
      run: async (call) => processes(call).readLog(caller(call), uuidArg(call.args[0], 'executionId'), (call.args[1] ?? {}) as { offset?: number; limitBytes?: number }),
    },
    stop: {
      run: async (call) => processes(call).stop(caller(call), uuidArg(call.args[0], 'executionId'), (call.args[1] ?? {}) as { reason?: string; waitMs?: number }),
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['executions', 'resolver'] }, serves: { workspaceProcesses: workspaceProcessesCapability.methods } });
