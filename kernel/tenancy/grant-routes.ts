import type { RouteModule } from '../http/app.ts';
import type { BoardActor } from '../auth/actor.ts';
import type { Queryable } from '../db/database.ts';
import { forbidden, notFound, unprocessable } from '../http/errors.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { bodyValidator, isUuid, queryValidator } from '../http/validate.ts';
import { companyForRequest } from './company-access.ts';
import { callerIds } from './agent-service.ts';
import {
  findMembership, hasGrant, listGrants, normalizeScope, PERMISSION_KEYS, toGrantJson, upsertGrant,
  type GrantRow, type PermissionKey, type PrincipalType,
} from './permission-grants.ts';

/**
 * Permission grants of a company. Reading needs board access to the company; changing them
 * needs the local board, an instance admin, the company's owner, or a member holding
 * users:manage_permissions. Agents use the agent permissions route instead.
 */
const listQuery = queryValidator<{ principalType?: PrincipalType; principalId?: string }>({
  type: 'object',
  properties: { principalType: { enum: ['user', 'agent'] }, principalId: { type: 'string', minLength: 1, maxLength: 200 } },
});

const upsertBody = bodyValidator<{ principalType: PrincipalType; principalId: string; permissionKey: PermissionKey; scope?: unknown }>({
  type: 'object',
  required: ['principalType', 'principalId', 'permissionKey'],
  properties: {
    principalType: { enum: ['user', 'agent'] },
    principalId: { type: 'string', minLength: 1, maxLength: 200 },
    permissionKey: { enum: [...PERMISSION_KEYS] },
    scope: { type: ['object', 'null'] },
  },
});

async function assertMayManagePermissions(db: Queryable, board: BoardActor, companyId: string): Promise<void> {
  if (board.isLocalBoard || board.isInstanceAdmin) return;
  const membership = await findMembership(db, companyId, 'user', board.userId);
  if (membership?.status === 'active' && membership.role === 'owner') return;
  if (membership?.status === 'active' && (await hasGrant(db, companyId, 'user', board.userId, 'users:manage_permissions'))) return;
  throw forbidden('Missing permission: changing permission grants requires users:manage_permissions', 'permission_denied', { permission: 'users:manage_permissions' });
}

/** A grant names a principal of this company: one of its agents or one of its members. */
async function normalizePrincipal(db: Queryable, companyId: string, type: PrincipalType, id: string): Promise<string> {
  if (type === 'agent') {
    const agent = isUuid(id) ? await db.maybeOne('select id from agents where id = ? and company_id = ?', [id.toLowerCase(), companyId]) : undefined;
    if (!agent) throw unprocessable('principalId does not name an agent of this company', { field: 'principalId' }, 'invalid_principal');
    return agent.id as string;
  }
  const userId = isUuid(id) ? id.toLowerCase() : id;
  const membership = await findMembership(db, companyId, 'user', userId);
  if (!membership) throw unprocessable('principalId does not name a member of this company', { field: 'principalId' }, 'invalid_principal');
  return userId;
}

async function assertScopeAgentsInCompany(db: Queryable, companyId: string, agentIds: string[]): Promise<void> {
  if (agentIds.length === 0) return;
  const rows = await db.query<{ id: string }>(
    'select id from agents where company_id = ? and id = any(array(select jsonb_array_elements_text(?::jsonb))::uuid[])', [companyId, JSON.stringify(agentIds)]);
  const known = new Set(rows.map((row) => row.id));
  const missing = agentIds.filter((id) => !known.has(id));
  if (missing.length > 0) throw unprocessable(`scope names agent ${missing[0]}, which is not an agent of this company`, { field: 'scope', agentIds: missing }, 'invalid_grant_scope');
}

export const grantRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Permission grants');

  route({
    method: 'GET', path: '/api/companies/:companyId/permission-grants', auth: 'board', query: listQuery, success: 200, response: LIST_RESPONSE,
    summary: "The company's permission grants",
  }, async (ctx, req) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const query = req.query();
    const principalId = query.principalId && isUuid(query.principalId) ? query.principalId.toLowerCase() : query.principalId;
    ctx.body = (await listGrants(kernel.db, company.id, { principalType: query.principalType, principalId })).map(toGrantJson);
  });

  route({
    method: 'PUT', path: '/api/companies/:companyId/permission-grants', auth: 'board', body: upsertBody, success: [200, 201], errors: [422],
    summary: 'Grant a permission to a member or agent of the company (201 when new, 200 when replaced)',
  }, async (ctx, req) => {
    const board = req.actor;
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    await assertMayManagePermissions(kernel.db, board, company.id);
    const body = await req.body();
    const { scope, agentIds } = normalizeScope(body.scope, body.permissionKey);
    const result = await kernel.db.transaction(async (tx) => {
      const principalId = await normalizePrincipal(tx, company.id, body.principalType, body.principalId);
      await assertScopeAgentsInCompany(tx, company.id, agentIds);
      const { userId, agentId } = callerIds(ctx);
      const upserted = await upsertGrant(tx, {
        companyId: company.id, principalType: body.principalType, principalId, permissionKey: body.permissionKey, scope,
        grantedByUserId: userId, grantedByAgentId: agentId,
      });
      await kernel.activity.recordFor(ctx, tx, {
        companyId: company.id, action: 'permission_grant.upserted', entityType: 'permission_grant', entityId: upserted.grant.id,
        details: { principalType: body.principalType, principalId, permissionKey: body.permissionKey, scope, created: upserted.created },
      });
      return upserted;
    });
    ctx.status = result.created ? 201 : 200;
    ctx.body = toGrantJson(result.grant);
  });

  route({ method: 'DELETE', path: '/api/companies/:companyId/permission-grants/:grantId', auth: 'board', success: 200, summary: 'Remove a permission grant' }, async (ctx, req) => {
    const board = req.actor;
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    await assertMayManagePermissions(kernel.db, board, company.id);
    const grantId = ctx.params.grantId;
    if (!isUuid(grantId)) throw notFound('Permission grant not found');
    await kernel.db.transaction(async (tx) => {
      const rows = await tx.query<GrantRow>('delete from permission_grants where id = ? and company_id = ? returning *', [grantId.toLowerCase(), company.id]);
      const grant = rows[0];
      if (!grant) throw notFound('Permission grant not found');
      await kernel.activity.recordFor(ctx, tx, {
        companyId: company.id, action: 'permission_grant.deleted', entityType: 'permission_grant', entityId: grant.id,
        details: { principalType: grant.principal_type, principalId: grant.principal_id, permissionKey: grant.permission_key },
      });
    });
    ctx.body = { ok: true, id: grantId.toLowerCase() };
  });
};
