import type { Context } from 'koa';
import type { Actor, AgentActor, BoardActor } from '../auth/actor.ts';
import type { RouteModule } from '../http/app.ts';
import { readJsonBody } from '../http/body.ts';
import { badRequest, forbidden, KeelError } from '../http/errors.ts';
import { declareRoutes, type ParameterDoc } from '../http/route-spec.ts';
import type { Validator } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { isCeoAgentOf } from '../tenancy/agent-access.ts';
import { companyForRequest } from '../tenancy/company-access.ts';
import { buildPackage, summarize } from './export.ts';
import { applyImport, previewImport, type ImportRequest } from './import.ts';
import { claimImport } from './import-runs.ts';
import { boardImportValidator, companyImportValidator, exportValidator, PACKAGE_MAX_BYTES, type ImportBody } from './package.ts';

const IDEMPOTENCY: readonly ParameterDoc[] = [{
  name: 'Idempotency-Key', in: 'header', schema: { type: 'string', maxLength: 200 },
  description: 'Makes a retried import safe: the first request imports, a retry with the same key and body answers the same result (Idempotent-Replayed: true) or continues an import that failed part-way; another body with the same key is 409 idempotency_key_reused.',
}];

/** The package may be far larger than the API's usual JSON limit, so these routes read their bodies themselves. */
async function readBody<T>(ctx: Context, validator: Validator<T>): Promise<T> {
  const raw = await readJsonBody(ctx, PACKAGE_MAX_BYTES);
  const value = raw === undefined ? {} : raw;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw badRequest('Request body must be a JSON object');
  return validator(value);
}

/** The stricter routes: the board, or the CEO agent of the route's company. */
async function boardOrCeo(ctx: Context, kernel: KernelServices, what: string) {
  const access = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
  if (access.actor.kind === 'agent' && !(await isCeoAgentOf(kernel.db, access.actor, access.company.id))) {
    throw forbidden(`Only the board or the company's CEO agent can ${what}`, 'ceo_required');
  }
  return access;
}

function mayReadConfig(actor: BoardActor | AgentActor, ceo: boolean): boolean {
  return actor.kind === 'board' || ceo;
}

function importRequest(body: ImportBody, target: ImportRequest['target']): ImportRequest {
  return { pkg: body.package, target, strategy: body.collisionStrategy ?? 'rename', inputs: body.inputs ?? {} };
}

async function runImport(ctx: Context, kernel: KernelServices, request: ImportRequest, scopeKey: string, body: ImportBody): Promise<void> {
  const key = ctx.get('idempotency-key');
  const claim = key ? await claimImport(kernel.db, scopeKey, key, body) : null;
  if (claim?.kind === 'replay') {
    ctx.set('Idempotent-Replayed', 'true');
    ctx.status = 201;
    ctx.body = claim.result;
    ctx.state.skipAudit = true;
    return;
  }
  try {
    const result = await applyImport(ctx, kernel, request, claim);
    await claim?.finish(result);
    ctx.status = 201;
    ctx.body = result;
  } catch (error) {
    await claim?.fail();
    throw error;
  }
}

export const portabilityRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Companies');

  route({
    method: 'POST', path: '/api/companies/:companyId/export', auth: 'any', body: exportValidator, success: 200,
    summary: 'Export the company as a package (any caller with company access; adapter configuration only for the board and the CEO)',
  }, async (ctx) => {
    const { actor, company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    await readBody(ctx, exportValidator);
    const ceo = actor.kind === 'agent' && await isCeoAgentOf(kernel.db, actor, company.id);
    const pkg = await buildPackage(kernel, company, actor, { withConfig: mayReadConfig(actor, ceo) });
    await recordExport(ctx, kernel, company.id, pkg);
    ctx.body = pkg;
  });

  route({
    method: 'POST', path: '/api/companies/:companyId/exports/preview', auth: 'any', body: exportValidator, success: 200,
    summary: 'What an export of the company would hold: counts, files and declared inputs (board or the CEO agent)',
  }, async (ctx) => {
    const { actor, company } = await boardOrCeo(ctx, kernel, 'preview an export');
    await readBody(ctx, exportValidator);
    ctx.body = summarize(await buildPackage(kernel, company, actor, { withConfig: true }));
  });

  route({
    method: 'POST', path: '/api/companies/:companyId/exports', auth: 'any', body: exportValidator, success: 200,
    summary: 'Export the company as a package with its full adapter configuration, secrets as declared inputs (board or the CEO agent)',
  }, async (ctx) => {
    const { actor, company } = await boardOrCeo(ctx, kernel, 'export the company');
    await readBody(ctx, exportValidator);
    const pkg = await buildPackage(kernel, company, actor, { withConfig: true });
    await recordExport(ctx, kernel, company.id, pkg);
    ctx.body = pkg;
  });

  route({
    method: 'POST', path: '/api/companies/import/preview', auth: 'board', body: boardImportValidator, success: 200, errors: [413, 422],
    summary: 'Preview an import into a new or an existing company (board only); writes nothing',
  }, async (ctx, req) => {
    const body = await readBody(ctx, boardImportValidator);
    ctx.body = await previewImport(kernel, req.actor, importRequest(body, await boardTarget(ctx, kernel, body)));
    ctx.state.skipAudit = true;
  });

  route({
    method: 'POST', path: '/api/companies/import', auth: 'board', body: boardImportValidator, parameters: IDEMPOTENCY, success: 201, errors: [409, 413, 422, 502],
    summary: 'Import a package into a new or an existing company (board only; the only import that may replace)',
  }, async (ctx, req) => {
    const body = await readBody(ctx, boardImportValidator);
    const target = await boardTarget(ctx, kernel, body);
    const scope = target.kind === 'existing' ? target.company.id : `new:${req.actor.userId}`;
    await runImport(ctx, kernel, importRequest(body, target), scope, body);
  });

  route({
    method: 'POST', path: '/api/companies/:companyId/imports/preview', auth: 'any', body: companyImportValidator, success: 200, errors: [413, 422],
    summary: 'Preview an import into this company (board or the CEO agent); writes nothing; replace is refused',
  }, async (ctx) => {
    const { company } = await boardOrCeo(ctx, kernel, 'import into the company');
    const body = refuseReplace(await readBody(ctx, companyImportValidator));
    ctx.body = await previewImport(kernel, ctx.state.actor as Actor, importRequest(body, { kind: 'existing', company }));
    ctx.state.skipAudit = true;
  });

  route({
    method: 'POST', path: '/api/companies/:companyId/imports/apply', auth: 'any', body: companyImportValidator, parameters: IDEMPOTENCY, success: 201, errors: [409, 413, 422, 502],
    summary: 'Import a package into this company (board or the CEO agent); replace is refused',
  }, async (ctx) => {
    const { company } = await boardOrCeo(ctx, kernel, 'import into the company');
    const body = refuseReplace(await readBody(ctx, companyImportValidator));
    await runImport(ctx, kernel, importRequest(body, { kind: 'existing', company }), company.id, body);
  });
};

/** The company-scoped imports only ever add to the route's company: they may not overwrite what it has. */
function refuseReplace(body: ImportBody): ImportBody {
  if (body.collisionStrategy === 'replace') {
    throw new KeelError(422, 'replace_not_allowed', "The company-scoped import does not accept the 'replace' collision strategy; use rename or skip (or the board's POST /api/companies/import)", { details: { field: 'collisionStrategy' } });
  }
  return body;
}

/** The board's target: a new company (named by the request or the package) or one it reaches (403 otherwise). */
async function boardTarget(ctx: Context, kernel: KernelServices, body: ImportBody): Promise<ImportRequest['target']> {
  const target = body.target ?? { mode: 'new_company' as const };
  if (target.mode === 'new_company') return { kind: 'new', name: (target.name ?? body.package.manifest.company.name).trim() || body.package.manifest.company.name };
  const { company } = await companyForRequest(ctx, kernel.db, target.companyId);
  return { kind: 'existing', company };
}

async function recordExport(ctx: Context, kernel: KernelServices, companyId: string, pkg: Awaited<ReturnType<typeof buildPackage>>): Promise<void> {
  await kernel.db.transaction(async (tx) => {
    await kernel.activity.recordFor(ctx, tx, {
      companyId, action: 'company.exported', entityType: 'company', entityId: companyId,
      details: { counts: summarize(pkg).counts, inputs: pkg.manifest.inputs.length },
    });
  });
}
