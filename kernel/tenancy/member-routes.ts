import type { RouteModule } from '../http/app.ts';
import { iso } from '../db/database.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { queryValidator } from '../http/validate.ts';
import { companyForRequest } from './company-access.ts';

type MembershipStatus = 'active' | 'suspended' | 'left';

/**
 * The company's member users: who the board is, so that an operator can see them and grant
 * them permissions (grants name a member by user id). Reading needs board access to the
 * company, like reading grants; memberships are created by the kernel, not by this route.
 */
const listQuery = queryValidator<{ status?: MembershipStatus }>({
  type: 'object',
  additionalProperties: false,
  properties: { status: { enum: ['active', 'suspended', 'left'] } },
});

interface MemberRow { principal_id: string; role: string; status: MembershipStatus; created_at: string; updated_at: string; email: string | null; name: string | null }

export const memberRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Company members');

  route({
    method: 'GET', path: '/api/companies/:companyId/members', auth: 'board', query: listQuery, success: 200, response: LIST_RESPONSE,
    summary: "The company's member users, oldest membership first",
  }, async (ctx, req) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const { status } = req.query();
    // A member need not be a stored user (the implicit local board is one by name only): left join.
    const rows = await kernel.db.query<MemberRow>(
      `select m.principal_id, m.role, m.status, m.created_at, m.updated_at, u.email, u.name
         from company_memberships m left join users u on u.id::text = m.principal_id
        where m.company_id = ? and m.principal_type = 'user' and (?::text is null or m.status = ?)
        order by m.created_at, m.id`,
      [company.id, status ?? null, status ?? null]);
    ctx.body = rows.map((row) => ({
      userId: row.principal_id, email: row.email, name: row.name, role: row.role, status: row.status,
      createdAt: iso(row.created_at), updatedAt: iso(row.updated_at),
    }));
  });
};
