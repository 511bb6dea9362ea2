import { executions as spec } from '../../../../sdk/capabilities/executions.ts';
import type { HttpExecutionInput, ProbeInput, ProcessExecutionInput } from '../../../../sdk/capabilities/executions.ts';
import { callCompany, uuidArg } from '../scope.ts';
import type { BrokeredCall, KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

/**
 * `ctx.executions`: the executor tier (kernel/executions/), reached through the broker. The
 * registry (sdk/capabilities/executions.ts) checked the grant and the arguments; the run must
 * be one of the call's company, and an execution is found only by the plugin that started it
 * in the company that call serves (anything else is not found, like an unknown id).
 */
const caller = (call: BrokeredCall<'executions' | 'points'>) => ({
  plugin: call.plugin, companyId: callCompany(call),
  // Tool launches and probes: agents of an adapter type this plugin contributes (the kernel point agent.adapter-config).
  contributes: (adapterType: string) => call.kernel.points.contributors('agent.adapter-config', adapterType).includes(call.plugin),
});

const executionsCapability: KernelCapability<'executions' | 'points'> = {
  methods: {
    start: { run: async (call) => call.kernel.executions.begin(caller(call), call.args[0] as ProcessExecutionInput | HttpExecutionInput) },
    get: { run: async (call) => call.kernel.executions.get(caller(call), uuidArg(call.args[0], 'executionId')) },
    getMany: {
      run: async (call) => call.kernel.executions.getMany(caller(call), (Array.isArray(call.args[0]) ? call.args[0] : []).map((id) => uuidArg(id, 'executionIds[]'))),
    },
    log: {
      run: async (call) => call.kernel.executions.readLog(caller(call), uuidArg(call.args[0], 'executionId'), (call.args[1] ?? {}) as { offset?: number; limitBytes?: number }),
    },
    probe: { run: async (call) => call.kernel.executions.probe(caller(call), call.args[0] as ProbeInput) },
    callbackUrl: { run: async (call) => call.kernel.executions.callbackUrls() },
    cancel: {
      run: async (call) => call.kernel.executions.cancel(caller(call), uuidArg(call.args[0], 'executionId'), ((call.args[1] ?? {}) as { reason?: string }).reason),
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['executions', 'points'] }, serves: { executions: executionsCapability.methods } });
