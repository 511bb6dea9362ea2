import type { Row } from '../db/database.ts';
import type { KernelServices } from '../services.ts';
import { deriveShortname } from '../tenancy/agent-shortname.ts';
import type { AgentRow } from '../tenancy/agents.ts';
import type { CompanyPackage, PackageAgent } from './package.ts';
import type { CollisionStrategy, PlanItem } from './parts.ts';
import { placeholdersIn } from './secret-inputs.ts';

/** Where an import goes: a company it creates, or one that exists. */
export type ImportTarget = { kind: 'new'; name: string } | { kind: 'existing'; company: Row };

export interface AgentPlan { agent: PackageAgent; action: 'create' | 'update' | 'skip'; existing: AgentRow | null; name: string }

export interface KernelPlan {
  company: PlanItem;
  agents: AgentPlan[];
  /** Source agent id -> the target agent (null: still to be created). */
  agentIds: Record<string, string | null>;
  /** Inputs the agents to be created or updated need. */
  neededInputs: string[];
}

/**
 * The kernel's side of an import plan. Agents collide by shortname with the target company's
 * agents that are not terminated: `skip` keeps the existing agent (the package's references
 * to it point at it), `rename` creates the imported one under a free name ("Coder 2"),
 * `replace` updates the existing one with the package's fields (its adapter configuration is
 * merged over the existing one, so keys the package does not carry, such as its secrets, stay).
 */
export async function planKernelPart(kernel: KernelServices, pkg: CompanyPackage, target: ImportTarget, strategy: CollisionStrategy): Promise<KernelPlan> {
  const existing = target.kind === 'existing'
    ? await kernel.db.query<AgentRow>("select * from agents where company_id = ? and status <> 'terminated'", [target.company.id])
    : [];
  const byKey = new Map(existing.map((row) => [row.url_key, row]));
  const taken = new Set(byKey.keys());
  const agents: AgentPlan[] = [];
  const agentIds: Record<string, string | null> = {};
  const needed = new Set<string>();
  for (const agent of pkg.manifest.agents) {
    const key = deriveShortname(agent.name);
    const match = byKey.get(key) ?? null;
    let plan: AgentPlan;
    if (!match) plan = { agent, action: 'create', existing: null, name: agent.name };
    else if (strategy === 'skip') plan = { agent, action: 'skip', existing: match, name: match.name };
    else if (strategy === 'replace') plan = { agent, action: 'update', existing: match, name: match.name };
    else plan = { agent, action: 'create', existing: null, name: freeName(agent.name, taken) };
    taken.add(deriveShortname(plan.name));
    agents.push(plan);
    agentIds[agent.id] = plan.existing?.id ?? null;
    if (plan.action !== 'skip') placeholdersIn([agent.adapterConfig, agent.runtimeConfig, agent.metadata], needed);
  }
  const company: PlanItem = target.kind === 'new'
    ? { kind: 'company', key: pkg.manifest.source.companyId, name: target.name, action: 'create' }
    : { kind: 'company', key: pkg.manifest.source.companyId, name: target.company.name, action: 'skip', reason: 'the target company is kept as it is' };
  return { company, agents, agentIds, neededInputs: [...needed].sort() };
}

/** The name a rename gives (the same rule as agent creation: a numeric suffix). */
function freeName(name: string, taken: Set<string>): string {
  if (!taken.has(deriveShortname(name))) return name;
  for (let n = 2; ; n++) if (!taken.has(deriveShortname(`${name} ${n}`))) return `${name} ${n}`;
}

export function agentPlanItems(plan: KernelPlan): PlanItem[] {
  return plan.agents.map((item) => ({
    kind: 'agent', key: item.agent.id, name: item.agent.name, action: item.action,
    ...(item.name !== item.agent.name ? { targetName: item.name } : {}),
    ...(item.action === 'skip' ? { reason: `an agent named ${item.name} exists` } : {}),
  }));
}
