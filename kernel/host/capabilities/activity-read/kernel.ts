import { activityRead as spec } from '../../../../sdk/capabilities/activity.ts';
import { forReaders } from '../../../activity/censor.ts';
import { MAX_ACTIVITY_LIST } from '../../../../sdk/capabilities/activity.ts';
import { callCompany, uuidArg } from '../scope.ts';
import type { KernelCapability } from '../types.ts';
import { kernelUnit } from '../unit.ts';

const DEFAULT_LIMIT = 100;

/**
 * `ctx.activity.list` (activity.read): the log of the company the call serves, newest first,
 * as the company feed serves it (details masked alike). The company comes from the kernel's
 * record of the call, never from the plugin. Entries about hidden rows are not left out: the
 * plugin asks about entities it knows, hidden or not.
 */
const activityCapability: KernelCapability<'activity' | 'db'> = {
  methods: {
    list: {
      run: async (call) => {
        const filter = (call.args[0] ?? {}) as { entityType?: string; entityId?: string; runId?: string; limit?: number };
        const entries = await call.kernel.activity.list(call.kernel.db, callCompany(call), {
          entityType: filter.entityType,
          entityId: filter.entityId,
          runId: filter.runId === undefined ? undefined : uuidArg(filter.runId, 'runId'),
          limit: Math.min(filter.limit ?? DEFAULT_LIMIT, MAX_ACTIVITY_LIST),
        });
        return forReaders(call.kernel.db, entries);
      },
    },
  },
};

export const kernelSide = kernelUnit(spec, { uses: { kernel: ['activity', 'db'] }, serves: { activity: activityCapability.methods } });
