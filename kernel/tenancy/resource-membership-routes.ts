import type { Context } from 'koa';
import type { BoardActor } from '../auth/actor.ts';
import type { RouteModule } from '../http/app.ts';
import { iso } from '../db/database.ts';
import { notFound } from '../http/errors.ts';
import { actorOf } from '../http/guards.ts';
import { uuidParam } from '../http/request.ts';
import { declareRoutes } from '../http/route-spec.ts';
import { bodyValidator } from '../http/validate.ts';
import type { KernelServices } from '../services.ts';
import { companyForRequest } from './company-access.ts';
import type { ResourceType } from './resource-resolvers.ts';

/**
 * Per-user resource memberships: whether the calling board user has joined or left a
 * project or an agent of a company (a UI preference; it grants nothing). A resource with no
 * stored row counts as joined. Board users only; agent tokens get 403.
 */
type MembershipState = 'joined' | 'left';

const stateValidator = bodyValidator<{ state: MembershipState }>({
  type: 'object',
  required: ['state'],
  properties: { state: { enum: ['joined', 'left'] } },
});

const RESOURCES: Array<{ type: ResourceType; segment: string; param: string; name: string }> = [
  { type: 'project', segment: 'projects', param: 'projectId', name: 'Project' },
  { type: 'agent', segment: 'agents', param: 'agentId', name: 'Agent' },
];

export const resourceMembershipRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Resource memberships');

  route({
    method: 'GET', path: '/api/companies/:companyId/resource-memberships/me', auth: 'board', success: 200,
    summary: "The calling user's joined and left projects and agents of the company",
  }, async (ctx) => {
    const { companyId, userId } = await boardInCompany(ctx, kernel);
    const rows = await kernel.db.query<{ resource_type: ResourceType; resource_id: string; state: MembershipState; updated_at: string }>(
      `select resource_type, resource_id, state, updated_at from resource_memberships
        where company_id = ? and user_id = ? order by resource_type, resource_id`, [companyId, userId]);
    const projectMemberships: Record<string, MembershipState> = {};
    const agentMemberships: Record<string, MembershipState> = {};
    let latest: string | null = null;
    for (const row of rows) {
      (row.resource_type === 'project' ? projectMemberships : agentMemberships)[row.resource_id] = row.state;
      const at = iso(row.updated_at)!;
      if (latest === null || at > latest) latest = at;
    }
    ctx.body = { projectMemberships, agentMemberships, updatedAt: latest };
  });

  for (const resource of RESOURCES) {
    route({
      method: 'PUT', path: `/api/companies/:companyId/resource-memberships/me/${resource.segment}/:${resource.param}`, auth: 'board', body: stateValidator,
      success: 200, summary: `Join or leave a ${resource.type} of the company (a preference of the calling user; grants nothing)`,
    }, async (ctx, req) => {
      const { companyId, userId } = await boardInCompany(ctx, kernel);
      const resourceId = uuidParam(ctx, resource.param, resource.name);
      const { state } = await req.body();
      if (!(await kernel.resources.exists(kernel.db, resource.type, companyId, resourceId))) throw notFound(`${resource.name} not found`);
      const result = await kernel.db.transaction(async (tx) => {
        const current = await tx.maybeOne<{ state: MembershipState; updated_at: string }>(
          `select state, updated_at from resource_memberships
            where company_id = ? and user_id = ? and resource_type = ? and resource_id = ? for update`,
          [companyId, userId, resource.type, resourceId]);
        const previous: MembershipState = current?.state ?? 'joined';
        if (previous === state) return { changed: false, updatedAt: iso(current?.updated_at) };
        const row = await tx.maybeOne<{ updated_at: string }>(
          `insert into resource_memberships (company_id, user_id, resource_type, resource_id, state) values (?, ?, ?, ?, ?)
           on conflict (company_id, user_id, resource_type, resource_id) do update set state = excluded.state, updated_at = now()
           returning updated_at`, [companyId, userId, resource.type, resourceId, state]);
        await kernel.activity.recordFor(ctx, tx, {
          companyId, action: `resource_membership.${state}`, entityType: 'resource_membership', entityId: resourceId,
          details: { userId, resourceType: resource.type, resourceId, state, previousState: previous },
        });
        return { changed: true, updatedAt: iso(row!.updated_at) };
      });
      // Setting the current state is a successful no-op: nothing changed, nothing to audit.
      if (!result.changed) ctx.state.skipAudit = true;
      ctx.body = { resourceType: resource.type, resourceId, state, updatedAt: result.updatedAt };
    });
  }
};

/** The company of a board request (its route's guard admitted the board) and the calling user. */
async function boardInCompany(ctx: Context, kernel: KernelServices): Promise<{ companyId: string; userId: string }> {
  const actor = actorOf(ctx) as BoardActor;
  const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
  return { companyId: company.id as string, userId: actor.userId };
}
