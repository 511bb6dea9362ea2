import { budgetsWrite as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';
import { bridge, cents, uuid } from '../../worker/capabilities/kernel-row-bridge.ts';
import { CapabilityError, type WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.budgets` (budgets.write): monthly budgets of the company and its agents. Month-to-date
 * spend is not a kernel row: the kernel reads the costs plugin's view (migration 0045).
 */
function budgetsCapability(db: PluginDatabase | null): WorkerCapability {
  return {
    setMonthlyBudget: async (invocation, args) => {
      const change = args[0] as { scope?: unknown; agentId?: unknown; cents?: unknown } | undefined;
      if (!change || (change.scope !== 'company' && change.scope !== 'agent')) throw new CapabilityError(400, 'invalid_arguments', "setMonthlyBudget needs {scope: 'company' | 'agent', agentId?, cents}");
      const target = change.scope === 'agent' ? uuid(change.agentId, 'agentId') : null;
      const found = await bridge(db, invocation, 'select keel_bridge.set_monthly_budget($1, $2, $3, $4::uuid, $5) as result', [change.scope, target, cents(change.cents, 'cents')]);
      return { updated: found === true };
    },
  };
}

export const workerSide = workerUnit(spec, ({ database }) => ({ budgets: budgetsCapability(database) }));
