import { defineCapability, method, present } from './define.ts';
import { changed, id, nullable, record, text } from './schemas.ts';

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
  /**
   * What an agent runtime needs to run the agent: its status, adapter type, and its adapter and
   * runtime configuration with every secret masked (as the configuration route shows them to a
   * board actor); null for an unknown id and another company's agent alike.
   */
  getConfig(agentId: string): Promise<AgentConfigView | null>;
}
export interface AgentConfigView {
  agentId: string;
  status: string;
  adapterType: string;
  adapterConfig: Record<string, unknown>;
  runtimeConfig: Record<string, unknown>;
}

const agentsGet = method('kernel', [id], nullable(record));
const agentsList = method('kernel', [], { type: 'array', items: record });
const agentsGetConfig = method('kernel', [id], nullable({
  type: 'object', required: ['agentId', 'status', 'adapterType', 'adapterConfig', 'runtimeConfig'],
  properties: { agentId: { type: 'string' }, status: { type: 'string' }, adapterType: { type: 'string' }, adapterConfig: record, runtimeConfig: record },
}));

export const agentsRead = defineCapability<{ agents: AgentsReadCapability }>()({
  id: 'agents.read',
  summary: 'Read the agents of the company a call serves (no secrets)',
  members: { agents: { get: agentsGet, list: agentsList, getConfig: agentsGetConfig } },
});

/**
 * Agents the plugin manages: the host makes one per company and `managed.agents` key while the
 * plugin is enabled (docs/plugins/managed-resources.md). The plugin finds its own by key and
 * reads them; it never names an agent it does not manage, and cannot create, rename or
 * configure agents (the board configures a managed agent like any other).
 */
export interface AgentsManagedCapability extends AgentsReadCapability {
  /** This plugin's managed agent `key` in the company the call serves (redacted view, with `managedBy`); null before the host made it. */
  getManaged(key: string): Promise<Record<string, unknown> | null>;
  /**
   * Makes this plugin's managed agent `key` (declared under managed.agents) in the company the
   * call serves if it is not there yet, and answers it. Committed at once, in a transaction of
   * its own, so it stays even when the call then fails; any number of calls, from any process,
   * make one agent. The way to make an agent declared `provision: "on_demand"`.
   */
  provisionManaged(key: string): Promise<Record<string, unknown>>;
}

export const agentsManaged = defineCapability<{ agents: AgentsManagedCapability }>()({
  id: 'agents.managed',
  summary: 'Have the host make and keep agents for each company (managed.agents), and find them by key',
  members: {
    agents: {
      get: agentsGet, list: agentsList, getConfig: agentsGetConfig,
      getManaged: method('kernel', [{ ...text(64), minLength: 1 }], nullable(record)),
      provisionManaged: method('kernel', [{ ...text(64), minLength: 1 }], record),
    },
  },
  requiredBy: (manifest) => present(manifest, 'managed.agents'),
});

/**
 * The desired skills the kernel keeps for an agent (adapterConfig.serviceSkillSync.desiredSkills,
 * which no adapterConfig edit can change): a skills domain keeps them in step with its own
 * record. Written by the kernel in a transaction of its own, with an `agent.updated` event; an
 * unknown agent and another company's agent both answer 404 `Agent not found`.
 */
export interface AgentsSkillsCapability extends AgentsReadCapability {
  setDesiredSkills(agentId: string, desiredSkills: string[]): Promise<{ desiredSkills: string[]; changed: boolean }>;
}

export const agentsSkillsWrite = defineCapability<{ agents: AgentsSkillsCapability }>()({
  id: 'agents.skills.write',
  summary: 'Set the desired skills the kernel keeps for the agents of the company a call serves',
  members: {
    agents: {
      get: agentsGet,
      list: agentsList,
      setDesiredSkills: method('kernel', [id, { type: 'array', maxItems: 1000, items: { type: 'string', minLength: 1, maxLength: 512 } }], {
        type: 'object', required: ['desiredSkills', 'changed'],
        properties: { desiredSkills: { type: 'array', items: { type: 'string' } }, changed: { type: 'boolean' } },
      }),
    },
  },
});

/**
 * Pauses are holds (the host README says more): a scope is paused while any hold is on it, and
 * a plugin lifts only its own, placed with the same reason; the board's pause, the archive's and
 * other plugins' stay. Both run in the call's own transaction: the hold, the status, the
 * activity entry and the status event commit or roll back with the plugin's writes. An unknown
 * agent and another company's agent both answer 404 `Agent not found`.
 */
export interface AgentsPauseCapability extends AgentsReadCapability {
  /** Places this plugin's hold on the agent; `changed` when it paused the agent. */
  pause(agentId: string, reason: string): Promise<HoldAnswer>;
  /** Lifts this plugin's hold with this reason; `changed` when no hold is left and the agent resumed. */
  resume(agentId: string, reason: string): Promise<HoldAnswer>;
}
export interface CompaniesPauseCapability {
  /** Places this plugin's hold on the company the call serves. */
  pause(reason: string): Promise<HoldAnswer>;
  /** Lifts this plugin's hold with this reason. */
  resume(reason: string): Promise<HoldAnswer>;
}
export interface HoldAnswer { changed: boolean }

const reason = { ...text(200), minLength: 1 };

export const agentsPause = defineCapability<{ agents: AgentsPauseCapability }>()({
  id: 'agents.pause',
  summary: 'Pause and resume the agents of the company a call serves (holds of its own)',
  members: {
    agents: {
      get: agentsGet,
      list: agentsList,
      getConfig: agentsGetConfig,
      pause: method('database', [id, reason], changed),
      resume: method('database', [id, reason], changed),
    },
  },
});

export const companiesPause = defineCapability<{ companies: CompaniesPauseCapability }>()({
  id: 'companies.pause',
  summary: 'Pause and resume the company a call serves (holds of its own)',
  members: {
    companies: {
      pause: method('database', [reason], changed),
      resume: method('database', [reason], changed),
    },
  },
});

/** The company's next issue number: `ACME-12` is prefix `ACME`, number 12. */
export interface IssueNumber { number: number; prefix: string; identifier: string }
export interface IssueNumbersCapability {
  /**
   * Takes the next number of the company's issue counter in a short transaction of its own,
   * committed at once: concurrent creates (in any process) never share a number and never wait
   * for each other's commits. A call that fails after taking a number leaves it unused, so take
   * it after every check that may refuse the create.
   */
  nextIssueNumber(): Promise<IssueNumber>;
  /**
   * Takes `count` (1-10,000) consecutive numbers at once, in the call's own transaction:
   * `first`..`last`, each identifier `<prefix>-<n>`. For bulk creation (a company import): one
   * lock, one update; the company's counter stays locked until the call ends, and a call that
   * rolls back gives its range back.
   */
  nextIssueNumbers(count: number): Promise<IssueNumberRange>;
}

/** Consecutive issue numbers taken at once: `first` to `last` inclusive. */
export interface IssueNumberRange { first: number; last: number; prefix: string }

export const issuesNumber = defineCapability<{ companies: IssueNumbersCapability }>()({
  id: 'issues.number',
  summary: "Number the issues of the company a call serves from the company's counter",
  members: {
    companies: {
      nextIssueNumber: method('database', [], {
        type: 'object', required: ['number', 'prefix', 'identifier'],
        properties: { number: { type: 'integer', minimum: 1 }, prefix: { type: 'string' }, identifier: { type: 'string' } },
      }),
      nextIssueNumbers: method('database', [{ type: 'integer', minimum: 1, maximum: 10000 }], {
        type: 'object', required: ['first', 'last', 'prefix'],
        properties: { first: { type: 'integer', minimum: 1 }, last: { type: 'integer', minimum: 1 }, prefix: { type: 'string' } },
      }),
    },
  },
});

/**
 * The monthly budgets of the company and its agents (budgets.write), kept once, on the kernel's
 * rows: set in the call's own transaction and only for the call's company and its agents, and
 * read in the plugin's own SQL through `keel_bridge.monthly_budget(company, scope, id)` (that one
 * figure; `monthly_budgets(scopes)` for many at once), all executable by the plugin's role only with the grant. Month-to-date spend is not
 * a kernel row: the kernel reads it from the costs plugin's own view
 * (plugins/costs/migrations/0005-month-spend-view.sql).
 */
export interface BudgetsCapability {
  /** The `budgetMonthlyCents` of the company or of one of its agents. */
  setMonthlyBudget(change: { scope: 'company' | 'agent'; agentId?: string; cents: number }): Promise<{ updated: boolean }>;
}

export const budgetsWrite = defineCapability<{ budgets: BudgetsCapability }>()({
  id: 'budgets.write',
  summary: 'Keep the monthly budget of the company and its agents in step',
  members: {
    budgets: {
      setMonthlyBudget: method('database', [{ type: 'object', required: ['scope', 'cents'] }], { type: 'object', required: ['updated'] }),
    },
  },
});

/**
 * Approval statuses: `pending` and `revision_requested` are open (the board can still decide
 * them); `approved`, `rejected` and `cancelled` are closed.
 */
export const APPROVAL_STATUSES = ['pending', 'revision_requested', 'approved', 'rejected', 'cancelled'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/** Which approvals of the company to read; every field is optional. */
export interface ApprovalFilter {
  status?: ApprovalStatus;
  /** `hire_agent`, for one. */
  type?: string;
}

export interface ApprovalsReadCapability {
  /** Approvals of the company this call serves, newest first: at most `limit` (1-500, default 100). */
  list(filter?: ApprovalFilter & { limit?: number }): Promise<Array<Record<string, unknown>>>;
  /** How many approvals of the company this call serves match. */
  count(filter?: ApprovalFilter): Promise<number>;
}

const approvalFilter = {
  status: { enum: [...APPROVAL_STATUSES] },
  type: { type: 'string', minLength: 1, maxLength: 100 },
};

export const approvalsRead = defineCapability<{ approvals: ApprovalsReadCapability }>()({
  id: 'approvals.read',
  summary: 'Read the approvals of the company a call serves',
  members: {
    approvals: {
      list: method('kernel', [{
        type: 'object', additionalProperties: false,
        properties: { ...approvalFilter, limit: { type: 'integer', minimum: 1, maximum: 500 } },
      }], { type: 'array', items: record }, { required: 0 }),
      count: method('kernel', [{ type: 'object', additionalProperties: false, properties: approvalFilter }], { type: 'integer', minimum: 0 }, { required: 0 }),
    },
  },
});

/**
 * Where an agent's instructions are, recorded in its adapter configuration (a configuration
 * revision with source `instructions`, the call's actor as its author). Only keys that name
 * instructions can be written (the standard `instructionsBundleMode`, `instructionsRootPath`,
 * `instructionsEntryFile`, `instructionsFilePath`, or a key whose name contains `instructions` or
 * `agentsMd`): nothing that decides what runs (command, args, cwd, env, url, ...), so such a
 * revision never counts as approving the configuration that runs.
 */
export interface AgentsInstructionsCapability {
  /** Sets each key to its string value, or removes it for null; answers the masked adapter configuration after. 404 `Agent not found` for another company's agent. */
  setInstructionKeys(agentId: string, values: Record<string, string | null>): Promise<{ adapterConfig: Record<string, unknown>; changed: boolean }>;
}

/** Adapter configuration keys `agents.instructions` may write. */
export const INSTRUCTION_KEY = /^(?=[A-Za-z][A-Za-z0-9_]{0,63}$)(?=.*(instructions|agentsMd))/i;

export const agentsInstructions = defineCapability<{ agents: AgentsInstructionsCapability }>()({
  id: 'agents.instructions',
  summary: "Record where the agents of the company a call serves find their instructions (instruction keys of their adapter configuration only)",
  members: {
    agents: {
      setInstructionKeys: method('kernel', [id, {
        type: 'object', minProperties: 1, maxProperties: 8,
        additionalProperties: { type: ['string', 'null'], maxLength: 4096 },
      }], { type: 'object', required: ['adapterConfig', 'changed'], properties: { adapterConfig: record, changed: { type: 'boolean' } } }),
    },
  },
});
