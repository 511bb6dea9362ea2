import { exportCompany, importCompany } from './portability.ts';
import type { BatchCall, CostsContext } from './context.ts';
import { definePlugin } from './plugin.gen.ts';
import { kernelEvents } from '@keel/sdk/plugin';
import type { RouteRequest } from '@keel/sdk/plugin';
import { agentBudget, companyBudget, onAgentChanged, onCompanyChanged, onCompanyDeleted, openIncidentsService, overview, resolveIncident, upsertPolicyRoute } from './budgets.ts';
import { acceptCostEvents } from './cost-events.ts';
import { createFinanceEvent, financeBy, financeEvents, financeSummary } from './finance.ts';
import { budgetBlocksService, recordUsageService, recordUsagesService } from './usage-service.ts';
import { breakdown, quotaWindows, summary, windowSpend } from './spend-reads.ts';
import { byRun } from './run-spend.ts';
import { dailySpend } from './daily-spend.ts';

/** One cost event on its own (a batch's fallback path) is a batch of one. */
async function createCostEvent(request: RouteRequest, ctx: CostsContext): Promise<unknown> {
  const [answer] = await acceptCostEvents([{ request, ctx } satisfies BatchCall], ctx);
  if (answer instanceof Error) throw answer;
  return answer;
}

export default definePlugin({
  routes: {
    'create-cost-event': createCostEvent,
    summary,
    'by-agent': breakdown('by-agent'),
    'by-agent-model': breakdown('by-agent-model'),
    'by-provider': breakdown('by-provider'),
    'by-biller': breakdown('by-biller'),
    'by-project': breakdown('by-project'),
    'by-source': breakdown('by-source'),
    'by-run': byRun,
    'window-spend': windowSpend,
    'daily-spend': dailySpend,
    'company-budget': companyBudget,
    'agent-budget': agentBudget,
    'budget-overview': overview,
    'upsert-policy': upsertPolicyRoute,
    'resolve-incident': resolveIncident,
    'create-finance-event': createFinanceEvent,
    'finance-summary': financeSummary,
    'finance-by-biller': financeBy('biller'),
    'finance-by-kind': financeBy('kind'),
    'finance-events': financeEvents,
    'quota-windows': quotaWindows,
  },
  batches: {
    'create-cost-event': acceptCostEvents,
  },
  // Durable subscribers: each event arrives at least once, in order per company or agent.
  events: {
    [kernelEvents.companyCreated.name]: onCompanyChanged,
    [kernelEvents.companyUpdated.name]: onCompanyChanged,
    [kernelEvents.agentCreated.name]: onAgentChanged,
    [kernelEvents.agentUpdated.name]: onAgentChanged,
    [kernelEvents.companyDeleted.name]: onCompanyDeleted,
  },
  services: {
    'export-company': exportCompany,
    'import-company': importCompany,
    'record-usage': recordUsageService,
    'record-usages': recordUsagesService,
    'budget-blocks': budgetBlocksService,
    'open-incidents': openIncidentsService,
  },
});
