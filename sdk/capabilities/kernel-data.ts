import { defineCapability, method } from './define.ts';
import { id, nullable, record, text } from './schemas.ts';

export interface CompaniesCapability { get(companyId: string): Promise<Record<string, unknown> | null> }

export const companiesRead = defineCapability<{ companies: CompaniesCapability }>()({
  id: 'companies.read',
  summary: 'Read the company a call serves',
  members: { companies: { get: method('kernel', [id], nullable(record)) } },
});

export interface AgentsReadCapability {
  /** An agent of the company this call serves (redacted view); null for an unknown id and for another company's agent alike. */
  get(agentId: string): Promise<Record<string, unknown> | null>;
  /** The agents of the company this call serves (redacted view), oldest first. */
  list(): Promise<Array<Record<string, unknown>>>;
}

const agentsGet = method('kernel', [id], nullable(record));
const agentsList = method('kernel', [], { type: 'array', items: record });

export const agentsRead = defineCapability<{ agents: AgentsReadCapability }>()({
  id: 'agents.read',
  summary: 'Read the agents of the company a call serves (no secrets)',
  members: { agents: { get: agentsGet, list: agentsList } },
});

export interface AgentsPauseCapability extends AgentsReadCapability {
  pause(agentId: string, reason: string): Promise<{ paused: boolean; status: string }>;
  resume(agentId: string, reason?: string): Promise<{ resumed: boolean; status: string }>;
}
/**
 * Pauses and resumes in the call's own transaction: they commit or roll back with the
 * plugin's writes, and each change is written to the activity log. A resume lifts only a
 * pause made with the same reason; an operator's own pause stays.
 */
export interface ScopesAgentCapability {
  pauseAgent(agentId: string, reason: string): Promise<{ changed: boolean }>;
  resumeAgent(agentId: string, reason: string): Promise<{ changed: boolean }>;
}
export interface ScopesCompanyCapability {
  pauseCompany(reason: string): Promise<{ changed: boolean }>;
  resumeCompany(reason: string): Promise<{ changed: boolean }>;
}

const reason = text(500);
const changed = { type: 'object', required: ['changed'], properties: { changed: { type: 'boolean' } } };

export const agentsPause = defineCapability<{ agents: AgentsPauseCapability; scopes: ScopesAgentCapability }>()({
  id: 'agents.pause',
  summary: 'Pause and resume the agents of the company a call serves',
  members: {
    agents: {
      get: agentsGet,
      list: agentsList,
      pause: method('kernel', [id, reason], { type: 'object', required: ['paused', 'status'] }),
      resume: method('kernel', [id, reason], { type: 'object', required: ['resumed', 'status'] }, { required: 1 }),
    },
    scopes: {
      pauseAgent: method('database', [id, reason], changed),
      resumeAgent: method('database', [id, reason], changed),
    },
  },
});

export const companiesPause = defineCapability<{ scopes: ScopesCompanyCapability }>()({
  id: 'companies.pause',
  summary: 'Pause and resume the company a call serves',
  members: {
    scopes: {
      pauseCompany: method('database', [reason], changed),
      resumeCompany: method('database', [reason], changed),
    },
  },
});

/**
 * Kernel rows a budget domain keeps in step (budgets.write). Both run in the call's own
 * transaction and act only on the call's company and its agents.
 */
export interface BudgetsCapability {
  /** Month-to-date spend (calendar month UTC, `YYYY-MM`) of the company and of some of its agents; a report for an older month than the stored one is ignored. */
  reportMonthlySpend(report: { month: string; companyCents?: number; agents?: Array<{ agentId: string; cents: number }> }): Promise<void>;
  /** The `budgetMonthlyCents` of the company or of one of its agents. */
  setMonthlyBudget(change: { scope: 'company' | 'agent'; agentId?: string; cents: number }): Promise<{ updated: boolean }>;
}

export const budgetsWrite = defineCapability<{ budgets: BudgetsCapability }>()({
  id: 'budgets.write',
  summary: 'Keep the monthly budget and spend of the company and its agents in step',
  members: {
    budgets: {
      reportMonthlySpend: method('database', [{ type: 'object', required: ['month'] }], { type: 'null' }),
      setMonthlyBudget: method('database', [{ type: 'object', required: ['scope', 'cents'] }], { type: 'object', required: ['updated'] }),
    },
  },
});
