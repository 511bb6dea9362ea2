import { runsOpen as spec } from '../../../../sdk/capabilities/runs.ts';
import { KeelError } from '../../../http/errors.ts';
import { contextArg } from '../runs-read/kernel.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';
import { confirmationOf, rememberOpenedRun } from './runs-of-failed-calls.ts';

/**
 * `ctx.runs.open` (runs.open): a run of an agent of the call's company, opened in the ledger with
 * its activity entry. A run opened by a call that then fails is closed by the kernel
 * (runs-of-failed-calls.ts); the worker confirms the runs of a call that commits
 * (keel_bridge.confirm_opened_runs, bridge.sql; worker side: opened-runs.ts).
 */
const runsOpen: KernelCapability<'activity' | 'db' | 'log' | 'runs', 'afterInvoke' | 'invocations'> = {
  methods: {
    open: {
      run: async (call) => {
        const input = (call.args[0] ?? {}) as { agentId?: unknown; invocationSource?: unknown; trigger?: unknown; context?: unknown };
        const agentId = uuidArg(input.agentId, 'agentId');
        const context = contextArg(input.context);
        const agent = await call.kernel.db.maybeOne<{ company_id: string }>(`select company_id from agents where id = ? and ${OF_CALL_COMPANY}`, [agentId, callCompany(call)]);
        if (!agent) throw new KeelError(404, 'not_found', 'Agent not found');
        const source = typeof input.invocationSource === 'string' && /^[a-z_]{1,40}$/.test(input.invocationSource) ? input.invocationSource : 'on_demand';
        const confirm = confirmationOf(call);
        const opened = await call.kernel.db.transaction(async (tx) => {
          const result = await call.kernel.runs.open(tx, {
            companyId: agent.company_id, agentId, invocationSource: source, trigger: typeof input.trigger === 'string' ? input.trigger.slice(0, 200) : undefined, openedByPlugin: call.plugin, confirm, context,
          });
          await call.kernel.activity.record(tx, {
            companyId: agent.company_id, actorType: 'system', actorId: `plugin:${call.plugin}`, agentId, runId: result.run.runId,
            action: 'run.opened', entityType: 'run', entityId: result.run.runId, details: { invocationSource: source, plugin: call.plugin },
          });
          return result;
        });
        rememberOpenedRun(call, opened.run.runId);
        return { runId: opened.run.runId, token: opened.token, tokenExpiresAt: opened.tokenExpiresAt };
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, {
  uses: { kernel: ['activity', 'db', 'log', 'runs'], host: ['afterInvoke', 'invocations'] },
  serves: { runs: runsOpen.methods },
  bridgeFunctions: ['keel_bridge.confirm_opened_runs(text, text)'],
});
