import { runsClose as spec } from '../../../../sdk/capabilities/runs.ts';
import { KeelError } from '../../../http/errors.ts';
import { callCompany, OF_CALL_COMPANY, uuidArg } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const CLOSE_STATUSES = new Set(['succeeded', 'failed', 'cancelled', 'timed_out']);

/** `ctx.runs.close` (runs.close): a run of the call's company closed in the ledger, with its activity entry. */
const runsClose: KernelCapability<'activity' | 'db' | 'runs'> = {
  methods: {
    close: {
      run: async (call) => {
        const runId = uuidArg(call.args[0], 'runId');
        const input = (call.args[1] ?? {}) as { status?: unknown; reason?: unknown };
        if (typeof input.status !== 'string' || !CLOSE_STATUSES.has(input.status)) throw new KeelError(400, 'invalid_arguments', `status must be one of ${[...CLOSE_STATUSES].join(', ')}`);
        const found = await call.kernel.db.maybeOne<{ company_id: string; agent_id: string }>(`select company_id, agent_id from runs where id = ? and ${OF_CALL_COMPANY}`, [runId, callCompany(call)]);
        if (!found) throw new KeelError(404, 'not_found', 'Run not found');
        const run = { companyId: found.company_id, agentId: found.agent_id };
        const closed = await call.kernel.db.transaction(async (tx) => {
          const result = await call.kernel.runs.close(tx, runId, { status: input.status as 'succeeded', reason: typeof input.reason === 'string' ? input.reason.slice(0, 500) : undefined });
          await call.kernel.activity.record(tx, {
            companyId: run.companyId, actorType: 'system', actorId: `plugin:${call.plugin}`, agentId: run.agentId, runId,
            action: 'run.closed', entityType: 'run', entityId: runId, details: { status: result.status, plugin: call.plugin },
          });
          return result;
        });
        return { runId: closed.runId, status: closed.status };
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['activity', 'db', 'runs'] }, serves: { runs: runsClose.methods } });
