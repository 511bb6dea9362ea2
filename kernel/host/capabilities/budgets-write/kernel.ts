import { budgetsWrite as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import { kernelUnit } from '../unit.ts';

/**
 * Served in the worker (worker.ts) through keel_bridge.set_monthly_budget (bridge.sql); the
 * budget it writes is read in the plugin's own SQL through keel_bridge.monthly_budget (one
 * scope) and monthly_budgets (many at once). All three are executable by the plugin's role only with this capability granted.
 */
export const kernelSide = kernelUnit(spec, {
  bridgeFunctions: ['keel_bridge.set_monthly_budget(text, text, text, uuid, bigint)', 'keel_bridge.monthly_budget(uuid, text, uuid)', 'keel_bridge.monthly_budgets(jsonb)'],
  writesKernelRows: true,
});
