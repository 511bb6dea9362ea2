import type { Context } from 'koa';
import { contributedAdapterConfig, storeSecretFields } from '../tenancy/adapter-config-point.ts';
import type { Actor } from '../auth/actor.ts';
import type { Row, Tx } from '../db/database.ts';
import type { KernelServices } from '../services.ts';
import { isPlainObject, SKILL_SYNC_KEY, validateAdapterEnv } from '../tenancy/agent-config.ts';
import { callerIds, insertAgent, requestedSnapshot, stateOf, writeAgent, type NewAgentValues } from '../tenancy/agent-service.ts';
import { finishUpdate } from '../tenancy/agent-update-routes.ts';
import { holdImportedAgent } from '../tenancy/agent-transitions.ts';
import { deepEqual } from '../tenancy/agent-config-revisions.ts';
import { assertValidManager, lockAgent, type AgentRow } from '../tenancy/agents.ts';
import { announceApproval } from '../tenancy/approval-decisions.ts';
import { createHireApproval } from '../tenancy/approvals.ts';
import { addMembership, insertCompany, lockCompany, toCompany } from '../tenancy/companies.ts';
import { eventActor } from '../tenancy/company-update.ts';
import { agentPlanItems, planKernelPart, type AgentPlan, type ImportTarget, type KernelPlan } from './import-plan.ts';
import type { ImportClaim, ImportProgress } from './import-runs.ts';
import type { CompanyPackage, PackageAgent } from './package.ts';
import type { CollisionStrategy, PlanItem } from './parts.ts';
import { assertInputsGiven, fillInputs } from './secret-inputs.ts';

export interface ImportRequest { pkg: CompanyPackage; target: ImportTarget; strategy: CollisionStrategy; inputs: Record<string, string> }

type Ids = Record<string, Record<string, string | null>>;

function partFiles(pkg: CompanyPackage, owner: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const path of pkg.manifest.parts[owner]?.files ?? []) if (path in pkg.files) files[path] = pkg.files[path]!;
  return files;
}

function counts(items: PlanItem[]): Record<'create' | 'update' | 'skip', number> {
  const out = { create: 0, update: 0, skip: 0 };
  for (const item of items) out[item.action] += 1;
  return out;
}

/** Plugin parts in the package that nothing on this instance imports: listed, never silently dropped. */
function unhandledParts(kernel: KernelServices, pkg: CompanyPackage): PlanItem[] {
  return Object.keys(pkg.manifest.parts).filter((owner) => !kernel.portability.get(owner))
    .map((owner) => ({ kind: 'part', key: owner, name: owner, action: 'skip' as const, reason: `no enabled plugin ${owner} imports this part` }));
}

/**
 * What an import would do, writing nothing: the kernel's plan, then each plugin part's own
 * (read-only calls), with the inputs the import needs and which of them the request lacks.
 */
export async function previewImport(kernel: KernelServices, actor: Actor, request: ImportRequest): Promise<Record<string, unknown>> {
  const plan = await planKernelPart(kernel, request.pkg, request.target, request.strategy);
  const items: PlanItem[] = [plan.company, ...agentPlanItems(plan)];
  const ids: Ids = { agents: plan.agentIds };
  const companyId = request.target.kind === 'existing' ? request.target.company.id : null;
  for (const part of kernel.portability.ordered()) {
    const data = request.pkg.manifest.parts[part.owner];
    if (!data) continue;
    const answer = await part.importPart({
      mode: 'preview', strategy: request.strategy, data: data.data, files: partFiles(request.pkg, part.owner), ids, sourceCompanyId: request.pkg.manifest.source.companyId,
    }, { companyId: companyId as string, actor });
    items.push(...(answer.plan ?? []).map((item) => ({ ...item, kind: `${part.owner}.${item.kind}` })));
    for (const [kind, map] of Object.entries(answer.ids ?? {})) ids[`${part.owner}.${kind}`] = map;
  }
  items.push(...unhandledParts(kernel, request.pkg));
  return {
    target: request.target.kind === 'new' ? { mode: 'new_company', name: request.target.name } : { mode: 'existing_company', companyId: request.target.company.id },
    collisionStrategy: request.strategy,
    plan: items,
    counts: counts(items),
    inputs: { required: plan.neededInputs, missing: plan.neededInputs.filter((name) => typeof request.inputs[name] !== 'string') },
  };
}

/** Skill keys local to the source company name it: the imported agent's desired skills name the target's. */
function rewriteSkillKeys(config: Record<string, unknown>, sourceCompanyId: string, targetCompanyId: string): Record<string, unknown> {
  const sync = config[SKILL_SYNC_KEY];
  if (!isPlainObject(sync) || !Array.isArray(sync.desiredSkills)) return config;
  const from = `company/${sourceCompanyId}/`;
  const desiredSkills = sync.desiredSkills.map((key) => (typeof key === 'string' && key.startsWith(from) ? `company/${targetCompanyId}/${key.slice(from.length)}` : key));
  return { ...config, [SKILL_SYNC_KEY]: { ...sync, desiredSkills } };
}

function allowedPermissions(permissions: Record<string, unknown>): Record<string, unknown> {
  return typeof permissions.canCreateAgents === 'boolean' ? { canCreateAgents: permissions.canCreateAgents } : {};
}

async function agentValues(kernel: KernelServices, ctx: Context, tx: Tx, request: ImportRequest, companyId: string, agent: PackageAgent, name: string): Promise<NewAgentValues> {
  const fill = (config: Record<string, unknown>) => fillInputs(tx, kernel.vault, config, request.inputs, { companyId, agentUrlKey: agent.urlKey, creator: callerIds(ctx) });
  const filled = rewriteSkillKeys(await fill(agent.adapterConfig), request.pkg.manifest.source.companyId, companyId);
  validateAdapterEnv(filled);
  // Written as a create writes it: the contributing plugin validates it and its addresses are checked as at connection.
  const contributed = await contributedAdapterConfig(ctx, kernel, { companyId, adapterType: agent.adapterType, adapterConfig: filled, agentId: null });
  const adapterConfig = contributed.answered ? await storeSecretFields(ctx, kernel, tx, companyId, contributed) : filled;
  return {
    name, role: agent.role || 'general', title: agent.title ?? null, icon: agent.icon ?? null,
    capabilities: request.pkg.files[agent.instructionsPath] || null, reportsTo: null,
    adapterType: agent.adapterType, adapterConfig, runtimeConfig: await fill(agent.runtimeConfig),
    budgetMonthlyCents: agent.budgetMonthlyCents ?? 0, metadata: agent.metadata ? await fill(agent.metadata) : null,
    permissions: allowedPermissions(agent.permissions ?? {}),
  };
}

/** The company: created from the package (its creator its owner), or the existing one locked for the import. */
async function targetCompany(ctx: Context, kernel: KernelServices, tx: Tx, request: ImportRequest): Promise<Row> {
  if (request.target.kind === 'existing') return (await lockCompany(tx, request.target.company.id))!;
  const source = request.pkg.manifest.company;
  const row = await insertCompany(tx, {
    name: request.target.name, description: request.pkg.files[source.descriptionPath] || null, budgetMonthlyCents: source.budgetMonthlyCents ?? 0,
    requireBoardApprovalForNewAgents: source.requireBoardApprovalForNewAgents === true, brandColor: source.brandColor ?? null,
  });
  const created = toCompany(row);
  const actor = ctx.state.actor as Actor;
  const ownerUserId = actor.kind === 'board' && !actor.isLocalBoard ? actor.userId : null;
  if (ownerUserId) {
    await addMembership(tx, created.id, ownerUserId, 'owner');
    await kernel.invalidate(tx, { type: 'user', id: ownerUserId });
  }
  await kernel.activity.recordFor(ctx, tx, {
    companyId: created.id, action: 'company.created', entityType: 'company', entityId: created.id,
    details: { name: created.name, issuePrefix: created.issuePrefix, budgetMonthlyCents: created.budgetMonthlyCents, ownerUserId, imported: true },
  });
  await kernel.events.emit(tx, 'company.created', { companyId: created.id, company: created, actor: eventActor(ctx) }, { awaited: true });
  return row;
}

/**
 * The kernel's part, in one transaction: the company, the agents (created, updated or kept),
 * their org chart, and a hire approval for each new agent when the company requires board
 * approval (the agent waits in pending_approval: never silently skipped). Otherwise a new agent,
 * or one whose adapter configuration the package changed, waits paused `imported` until the
 * board approves that configuration (agent-transitions.ts).
 */
async function applyKernelPart(ctx: Context, kernel: KernelServices, tx: Tx, request: ImportRequest, plan: KernelPlan): Promise<{ companyId: string; agentIds: Record<string, string>; approvals: string[] }> {
  const company = await targetCompany(ctx, kernel, tx, request);
  const needsApproval = company.require_board_approval_for_new_agents === true;
  const agentIds: Record<string, string> = {};
  const approvals: string[] = [];
  const written: Array<{ item: AgentPlan; row: AgentRow }> = [];
  for (const item of plan.agents) {
    if (item.action === 'skip') { agentIds[item.agent.id] = item.existing!.id; continue; }
    const values = await agentValues(kernel, ctx, tx, request, company.id, item.agent, item.name);
    if (item.action === 'create') {
      let row = await insertAgent(ctx, kernel, tx, company.id, values, needsApproval ? 'pending_approval' : 'idle', { imported: true }, 'import');
      // Its configuration came from the package: it waits for the board, as a hire or paused.
      if (!needsApproval) row = await holdImportedAgent(ctx, kernel, tx, row.id);
      if (needsApproval) {
        const { userId, agentId } = callerIds(ctx);
        const approval = await createHireApproval(tx, {
          companyId: company.id, agentId: row.id, requestedByUserId: userId, requestedByAgentId: agentId,
          payload: { ...requestedSnapshot(values), agentId: row.id, name: row.name, urlKey: row.url_key, imported: true },
        });
        await announceApproval(ctx, kernel, tx, approval);
        approvals.push(approval.id);
      }
      agentIds[item.agent.id] = row.id;
      written.push({ item, row });
    } else {
      const before = await lockAgent(tx, item.existing!.id);
      const state = stateOf(before);
      const after = await writeAgent(tx, before.id, {
        ...state, role: values.role, title: values.title, icon: values.icon, capabilities: values.capabilities, adapter_type: values.adapterType,
        adapter_config: { ...(before.adapter_config ?? {}), ...values.adapterConfig }, runtime_config: { ...(before.runtime_config ?? {}), ...values.runtimeConfig },
        budget_monthly_cents: values.budgetMonthlyCents, metadata: values.metadata ?? before.metadata,
      });
      await finishUpdate(ctx, kernel, tx, before, after, 'agent.updated', 'import', { details: { imported: true } });
      const reconfigured = before.adapter_type !== after.adapter_type || !deepEqual(before.adapter_config, after.adapter_config);
      const row = reconfigured ? await holdImportedAgent(ctx, kernel, tx, after.id) : after;
      agentIds[item.agent.id] = row.id;
      written.push({ item, row });
    }
  }
  // The org chart, once every agent has its id: a manager outside the package stays unset.
  for (const { item, row } of written) {
    const manager = item.agent.reportsTo ? agentIds[item.agent.reportsTo] : undefined;
    if (!manager || manager === row.reports_to) continue;
    await assertValidManager(tx, company.id, manager, row.id);
    await tx.exec('update agents set reports_to = ?, updated_at = now() where id = ?', [manager, row.id]);
  }
  return { companyId: company.id, agentIds, approvals };
}

/**
 * Applies an import: the kernel's part in one transaction, then each plugin part in its own
 * (in order, each handed the id maps of what came before). With an idempotency claim, progress
 * is saved after each step, so a retry after a failure continues where it stopped.
 */
export async function applyImport(ctx: Context, kernel: KernelServices, request: ImportRequest, claim: Extract<ImportClaim, { kind: 'run' }> | null): Promise<Record<string, unknown>> {
  const actor = ctx.state.actor as Actor;
  const progress: ImportProgress = claim?.progress ?? {};
  const plan = await planKernelPart(kernel, request.pkg, request.target, request.strategy);
  if (!progress.companyId) assertInputsGiven(plan.neededInputs, request.inputs);
  const items: PlanItem[] = [plan.company, ...agentPlanItems(plan)];
  if (!progress.companyId) {
    const kernelPart = await kernel.db.transaction(async (tx) => {
      const done = await applyKernelPart(ctx, kernel, tx, request, plan);
      Object.assign(progress, { companyId: done.companyId, ids: { agents: done.agentIds }, kernel: { approvals: done.approvals, items }, parts: {} });
      await claim?.save(tx, progress);
      return done;
    });
    void kernelPart;
  }
  const companyId = progress.companyId!;
  const kernelItems = (progress.kernel as { items: PlanItem[] }).items;
  const approvals = (progress.kernel as { approvals: string[] }).approvals;
  const ids: Ids = progress.ids ?? {};
  const parts = progress.parts ?? {};
  const results: PlanItem[] = [...kernelItems];
  for (const part of kernel.portability.ordered()) {
    const data = request.pkg.manifest.parts[part.owner];
    if (!data) continue;
    let answer = parts[part.owner] as { plan: PlanItem[]; ids?: Ids } | undefined;
    if (!answer) {
      answer = await part.importPart({
        mode: 'apply', strategy: request.strategy, data: data.data, files: partFiles(request.pkg, part.owner), ids, sourceCompanyId: request.pkg.manifest.source.companyId,
      }, { companyId, actor });
      parts[part.owner] = { plan: answer.plan ?? [], ids: answer.ids ?? {} };
      for (const [kind, map] of Object.entries(answer.ids ?? {})) ids[`${part.owner}.${kind}`] = map;
      Object.assign(progress, { ids, parts });
      if (claim) await claim.save(kernel.db, progress);
    }
    results.push(...(answer.plan ?? []).map((item) => ({ ...item, kind: `${part.owner}.${item.kind}` })));
  }
  results.push(...unhandledParts(kernel, request.pkg));
  const summary = counts(results);
  await kernel.db.transaction(async (tx) => {
    await kernel.activity.recordFor(ctx, tx, {
      companyId, action: 'company.imported', entityType: 'company', entityId: companyId,
      details: { sourceCompanyId: request.pkg.manifest.source.companyId, collisionStrategy: request.strategy, ...summary, approvals: approvals.length },
    });
  });
  return { companyId, collisionStrategy: request.strategy, plan: results, counts: summary, approvalIds: approvals };
}
