import type { Context } from 'koa';
import type { BoardActor } from '../auth/actor.ts';
import type { RouteModule } from '../http/app.ts';
import { badRequest, forbidden, notFound, validationFailed } from '../http/errors.ts';
import { IDEMPOTENCY_KEY_PARAMETER } from '../http/idempotency-key.ts';
import { createOnceForRequest } from '../http/idempotent-create.ts';
import { parseBody } from '../http/request.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { bodyValidator, queryValidator, uuidPattern, type Schema, type Validator } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { addMembership, COMPANY_STATUSES, companyStats, findCompany, insertCompany, listCompanies, lockCompany, toCompany, updateCompanyColumns } from './companies.ts';
import { companyForRequest, withCurrentSpend } from './company-access.ts';
import { applyStatusSideEffects, purgeCompany, statusColumns, syncBoardCompanyHolds } from './company-lifecycle.ts';
import { applyCompanyPatch, BRANDING_FIELDS, eventActor, NON_BRANDING_FIELDS, type CompanyPatch } from './company-update.ts';

export const NAME_MAX_LENGTH = 200;
export const DESCRIPTION_MAX_LENGTH = 10_000;

const fields: Record<string, Schema> = {
  name: { type: 'string', minLength: 1, maxLength: NAME_MAX_LENGTH },
  description: { type: ['string', 'null'], maxLength: DESCRIPTION_MAX_LENGTH },
  budgetMonthlyCents: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  status: { enum: [...COMPANY_STATUSES] },
  brandColor: { type: ['string', 'null'], pattern: '^#[0-9a-fA-F]{6}$' },
  logoAssetId: { type: ['string', 'null'], pattern: uuidPattern },
  requireBoardApprovalForNewAgents: { type: 'boolean' },
  feedbackDataSharingEnabled: { type: 'boolean' },
  feedbackDataSharingTermsVersion: { type: 'string', minLength: 1, maxLength: 64, pattern: '^\\S+$' },
};
const pick = (...names: string[]) => Object.fromEntries(names.map((name) => [name, fields[name]]));

interface CreateBody {
  name: string;
  description?: string | null;
  budgetMonthlyCents?: number;
  requireBoardApprovalForNewAgents?: boolean;
  brandColor?: string | null;
}
const createValidator = bodyValidator<CreateBody>({
  type: 'object',
  properties: pick('name', 'description', 'budgetMonthlyCents', 'requireBoardApprovalForNewAgents', 'brandColor'),
  required: ['name'],
});
const patchValidator = bodyValidator<CompanyPatch>({ type: 'object', properties: fields });
const brandingValidator = bodyValidator<CompanyPatch>({ type: 'object', properties: pick(...BRANDING_FIELDS) });
const anyObject = bodyValidator<Record<string, unknown>>({ type: 'object' });
const listQuery = queryValidator<{ includeArchived: boolean }>({
  type: 'object', properties: { includeArchived: { type: 'boolean', default: false } },
});

/** Names are shown everywhere and seed the issue prefix, so surrounding blanks are dropped and a blank name is refused. */
function trimName<T extends { name?: string }>(body: T): T {
  if (body.name === undefined) return body;
  const name = body.name.trim();
  if (!name) throw validationFailed('Invalid request body: name must not be blank', [{ path: 'name', message: 'must not be blank' }]);
  return { ...body, name };
}

/** Companies the board actor reaches: null means all of them. */
function reachableIds(actor: BoardActor): readonly string[] | null {
  return actor.isLocalBoard || actor.isInstanceAdmin ? null : actor.companyIds;
}

/**
 * Shared guard of PATCH and /branding: company access first (401/403/404), then the agent
 * rule. The agent's role is read from the database, not the credential cache, because it
 * decides a write.
 */
async function authorizeCompanyWrite(ctx: Context, kernel: KernelServices, route: 'patch' | 'branding'): Promise<{ companyId: string; isAgent: boolean }> {
  const { actor, company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
  if (actor.kind === 'agent') {
    const agent = await kernel.db.maybeOne<{ role: string; company_id: string }>('select role, company_id from agents where id = ?', [actor.agentId]);
    if (!agent || agent.company_id !== company.id || agent.role !== 'ceo') {
      throw forbidden(route === 'patch' ? 'Only CEO agents or board users may update company settings' : 'Only CEO agents can update company branding', 'ceo_required');
    }
  }
  return { companyId: company.id, isAgent: actor.kind === 'agent' };
}

/**
 * Reads a patch body, refusing non-branding company fields where only branding may change.
 * The refusal comes first (an agent learns it may not touch a field before whether its value
 * was valid), so the body is read as any object and then checked with the route's validator.
 */
async function readPatch(ctx: Context, kernel: KernelServices, validator: Validator<CompanyPatch>, options: { brandingOnly: boolean; isAgent: boolean }): Promise<CompanyPatch> {
  const raw = await parseBody(ctx, kernel, anyObject);
  if (options.isAgent || options.brandingOnly) {
    const refused = NON_BRANDING_FIELDS.filter((field) => field in raw);
    if (refused.length > 0) {
      const allowed = BRANDING_FIELDS.join(', ');
      if (options.isAgent) throw forbidden(`CEO agents may only change branding fields (${allowed}); refused: ${refused.join(', ')}`, 'branding_fields_only', { refused });
      throw badRequest(`Only branding fields (${allowed}) can be changed through /branding; use PATCH /api/companies/{companyId} for ${refused.join(', ')}`, { refused });
    }
  }
  const body = trimName(validator(raw));
  const known = (options.brandingOnly ? BRANDING_FIELDS : Object.keys(fields)).filter((field) => (body as Record<string, unknown>)[field] !== undefined);
  if (known.length === 0) throw badRequest(options.brandingOnly ? 'At least one branding field must be provided' : 'At least one updatable field must be provided');
  return body;
}

export const companyRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Companies');

  route({
    method: 'GET', path: '/api/companies', auth: 'board', query: listQuery, success: 200, response: LIST_RESPONSE,
    summary: 'Companies the caller reaches',
  }, async (ctx, req) => {
    const actor = req.actor;
    const query = req.query();
    const rows = await listCompanies(kernel.db, { ids: reachableIds(actor), includeArchived: query.includeArchived });
    ctx.body = rows.map(toCompany);
  });

  // Registered before /:companyId, which would otherwise take "stats" for an id.
  route({ method: 'GET', path: '/api/companies/stats', auth: 'board', success: 200, summary: 'Counts per company the caller reaches' }, async (ctx, req) => {
    const actor = req.actor;
    ctx.body = await companyStats(kernel.db, reachableIds(actor));
  });

  route({ method: 'GET', path: '/api/companies/:companyId', auth: 'any', success: 200, summary: 'One company' }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    ctx.body = toCompany(await withCurrentSpend(kernel.db, company));
  });

  route({
    method: 'POST', path: '/api/companies', auth: 'board', body: createValidator, success: 201, parameters: [IDEMPOTENCY_KEY_PARAMETER], errors: [409],
    summary: 'Create a company',
  }, async (ctx, req) => {
    const actor = req.actor;
    const body = trimName(await req.body());
    ctx.body = await kernel.db.transaction((tx) => createOnceForRequest(ctx, tx, {
      kind: 'company', companyId: null, request: body,
      load: async (id) => { const row = await findCompany(tx, id); return row ? toCompany(row) : null; },
      create: async () => {
        const row = await insertCompany(tx, {
          name: body.name,
          description: body.description ?? null,
          budgetMonthlyCents: body.budgetMonthlyCents ?? 0,
          requireBoardApprovalForNewAgents: body.requireBoardApprovalForNewAgents ?? false,
          brandColor: body.brandColor ?? null,
        });
        const created = toCompany(row);
        // A signed-in user owns what they create; the local board reaches every company anyway.
        const ownerUserId = actor.isLocalBoard ? null : actor.userId;
        if (ownerUserId) {
          await addMembership(tx, created.id, ownerUserId, 'owner');
          await kernel.invalidate(tx, { type: 'user', id: ownerUserId });
        }
        await kernel.activity.recordFor(ctx, tx, {
          companyId: created.id, action: 'company.created', entityType: 'company', entityId: created.id,
          details: { name: created.name, issuePrefix: created.issuePrefix, budgetMonthlyCents: created.budgetMonthlyCents, ownerUserId },
        });
        await kernel.events.emit(tx, 'company.created', { companyId: created.id, company: created, actor: eventActor(ctx) }, { awaited: true });
        return { id: created.id, answer: created };
      },
    }));
  });

  route({
    method: 'PATCH', path: '/api/companies/:companyId', auth: 'any', body: patchValidator, success: 200, errors: [422],
    summary: 'Change company fields (board users; CEO agents change branding fields only)',
  }, async (ctx) => {
    const { companyId, isAgent } = await authorizeCompanyWrite(ctx, kernel, 'patch');
    const patch = await readPatch(ctx, kernel, patchValidator, { brandingOnly: false, isAgent });
    ctx.body = await applyCompanyPatch(ctx, kernel, companyId, patch, 'company.updated');
  });

  route({
    method: 'PATCH', path: '/api/companies/:companyId/branding', auth: 'any', body: brandingValidator, success: 200, errors: [422],
    summary: "Change the company's branding fields (board users and the CEO agent)",
  }, async (ctx) => {
    const { companyId, isAgent } = await authorizeCompanyWrite(ctx, kernel, 'branding');
    const patch = await readPatch(ctx, kernel, brandingValidator, { brandingOnly: true, isAgent });
    ctx.body = await applyCompanyPatch(ctx, kernel, companyId, patch, 'company.branding_updated');
  });

  route({ method: 'POST', path: '/api/companies/:companyId/archive', auth: 'board', success: 200, summary: 'Archive a company (pauses its agents)' }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const result = await kernel.db.transaction(async (tx) => {
      const current = await lockCompany(tx, company.id);
      if (!current) throw notFound('Company not found');
      // Archiving twice is a no-op that answers with the company as it stands.
      if (current.status === 'archived') return { company: toCompany(current), changed: false };
      const actor = eventActor(ctx);
      const effects = await applyStatusSideEffects(kernel, tx, company.id, current.status, 'archived', actor);
      const archived = toCompany(await updateCompanyColumns(tx, company.id, statusColumns(current.status, 'archived')));
      await syncBoardCompanyHolds(tx, company.id, current.status, 'archived');
      await kernel.activity.recordFor(ctx, tx, {
        companyId: company.id, action: 'company.archived', entityType: 'company', entityId: company.id,
        details: { previousStatus: current.status, pausedAgentIds: effects.pausedAgentIds },
      });
      await kernel.events.emit(tx, 'company.updated', { companyId: company.id, company: archived, changes: { status: 'archived' }, actor });
      await kernel.events.emit(tx, 'company.status_changed', { companyId: company.id, from: current.status, to: 'archived', reason: null, actor });
      await kernel.events.emit(tx, 'company.archived', { companyId: company.id, actor });
      return { company: archived, changed: true };
    });
    if (!result.changed) ctx.state.skipAudit = true;
    ctx.body = result.company;
  });

  route({ method: 'DELETE', path: '/api/companies/:companyId', auth: 'board', success: 200, summary: 'Delete a company and everything it holds' }, async (ctx) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    await kernel.db.transaction(async (tx) => {
      const current = await lockCompany(tx, company.id, 'update');
      if (!current) throw notFound('Company not found');
      const purged = await purgeCompany(tx, company.id);
      for (const agentId of purged.agentIds) await kernel.invalidate(tx, { type: 'agent', id: agentId });
      for (const userId of purged.userIds) await kernel.invalidate(tx, { type: 'user', id: userId });
      // The company's own chain is gone; the instance chain keeps the record that it existed.
      await kernel.activity.recordFor(ctx, tx, {
        companyId: null, action: 'company.deleted', entityType: 'company', entityId: company.id,
        details: { name: current.name, issuePrefix: current.issue_prefix, purgedActivityEntries: purged.purgedActivityEntries },
      });
      await kernel.events.emit(tx, 'company.deleted', { companyId: company.id, actor: eventActor(ctx) });
    });
    ctx.body = { ok: true };
  });
};
