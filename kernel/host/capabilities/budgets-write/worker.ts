import { budgetsWrite as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';
import { bridge, cents, uuid } from '../../worker/capabilities/kernel-row-bridge.ts';
import { CapabilityError, type WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

/**
 * `ctx.budgets` (budgets.write): monthly budgets and month-to-date spend of the company and its
 * agents. A batch's month-to-date report is sent with its COMMIT (bridge, 'with_commit').
 */
function budgetsCapability(db: PluginDatabase | null): WorkerCapability {
  return {
    reportMonthlySpend: async (invocation, args) => {
      const report = args[0] as { month?: unknown; companyCents?: unknown; agents?: unknown } | undefined;
      if (!report || typeof report !== 'object') throw new CapabilityError(400, 'invalid_arguments', 'reportMonthlySpend needs {month, companyCents?, agents?}');
      const month = typeof report.month === 'string' ? MONTH.exec(report.month) : null;
      if (!month) throw new CapabilityError(400, 'invalid_arguments', 'month must be YYYY-MM');
      const agents = report.agents === undefined ? [] : report.agents;
      if (!Array.isArray(agents) || agents.length > 10_000) throw new CapabilityError(400, 'invalid_arguments', 'agents must be an array of at most 10,000 {agentId, cents}');
      const rows = agents.map((entry: { agentId?: unknown; cents?: unknown }) => ({ id: uuid(entry?.agentId, 'agentId'), cents: cents(entry?.cents, 'cents') }));
      const companyCents = report.companyCents === undefined || report.companyCents === null ? null : cents(report.companyCents, 'companyCents');
      await bridge(db, invocation, 'select keel_bridge.report_monthly_spend($1, $2, $3::date, $4, $5::jsonb) as result', [`${month[1]}-${month[2]}-01`, companyCents, JSON.stringify(rows)], 'with_commit');
      return null;
    },
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
