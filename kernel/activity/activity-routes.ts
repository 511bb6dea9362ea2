import type { RouteModule } from '../http/app.ts';
import { unprocessable } from '../http/errors.ts';
import { actorOf } from '../http/guards.ts';
import { IDEMPOTENCY_KEY_PARAMETER } from '../http/idempotency-key.ts';
import { createOnceForRequest } from '../http/idempotent-create.ts';
import { declareRoutes, LIST_RESPONSE } from '../http/route-spec.ts';
import { bodyValidator, queryValidator, uuidPattern } from '../http/validate.ts';
import { companyForRequest } from '../tenancy/company-access.ts';
import { toRecord, type ActivityInput } from './activity-log.ts';
import { forReaders } from './censor.ts';

/**
 * The company activity feed and manual activity entries. Issue activity and issue runs
 * are served by the work plugin, which owns issues.
 */
const listQuery = queryValidator<{ agentId?: string; actorType?: 'agent' | 'user' | 'system'; actorId?: string; entityType?: string; entityId?: string }>({
  type: 'object',
  properties: {
    agentId: { type: 'string', pattern: uuidPattern },
    actorType: { enum: ['agent', 'user', 'system'] },
    actorId: { type: 'string', minLength: 1, maxLength: 200 },
    entityType: { type: 'string', minLength: 1, maxLength: 200 },
    entityId: { type: 'string', minLength: 1, maxLength: 500 },
  },
});

/** The body of POST activity: an entry without company (from the path) or run (from the request). */
type CreateActivity = Omit<ActivityInput, 'companyId' | 'runId' | 'details'> & { details?: Record<string, unknown> | null };

const createValidator = bodyValidator<CreateActivity>({
  type: 'object',
  required: ['actorId', 'action', 'entityType', 'entityId'],
  properties: {
    actorType: { enum: ['agent', 'user', 'system'], default: 'system' },
    actorId: { type: 'string', minLength: 1, maxLength: 200 },
    action: { type: 'string', minLength: 1, maxLength: 200 },
    entityType: { type: 'string', minLength: 1, maxLength: 200 },
    entityId: { type: 'string', minLength: 1, maxLength: 500 },
    agentId: { type: ['string', 'null'], pattern: uuidPattern },
    details: { type: ['object', 'null'] },
  },
});

export const activityRoutes: RouteModule = (router, kernel) => {
  const route = declareRoutes(router, kernel, 'Activity');

  route({
    method: 'GET', path: '/api/companies/:companyId/activity', auth: 'any', query: listQuery, success: 200, response: LIST_RESPONSE,
    summary: "The company's activity log, newest first, without entries about hidden rows",
  }, async (ctx, req) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const filters = req.query();
    // Entries about hidden rows (a hidden issue) stay in the log but not in the feed.
    const entries = await kernel.activity.list(kernel.db, company.id, {
      agentId: filters.agentId?.toLowerCase(), actorType: filters.actorType, actorId: filters.actorId,
      entityType: filters.entityType, entityId: filters.entityId,
    }, { omitHidden: true });
    ctx.body = await forReaders(kernel.db, entries);
  });

  route({
    method: 'POST', path: '/api/companies/:companyId/activity', auth: 'board', body: createValidator, success: 201, errors: [409, 422], parameters: [IDEMPOTENCY_KEY_PARAMETER],
    summary: 'Record an activity entry by hand',
  }, async (ctx, req) => {
    const { company } = await companyForRequest(ctx, kernel.db, ctx.params.companyId);
    const body = await req.body();
    const agentId = body.agentId?.toLowerCase() ?? null;
    if (agentId && !(await kernel.db.maybeOne('select 1 from agents where id = ? and company_id = ?', [agentId, company.id]))) {
      throw unprocessable('agentId must name an agent of this company', { agentId }, 'agent_not_in_company');
    }
    // With an Idempotency-Key, a retry answers the entry it recorded (200) instead of recording it twice.
    ctx.body = await kernel.db.transaction((tx) => createOnceForRequest(ctx, tx, {
      kind: 'activity', companyId: company.id, request: body,
      load: async (id) => { const row = await tx.maybeOne('select * from activity_log where id = ? and company_id = ?', [id, company.id]); return row ? toRecord(row) : null; },
      create: async () => {
        const entry = await kernel.activity.record(tx, {
          companyId: company.id, actorType: body.actorType, actorId: body.actorId, action: body.action, entityType: body.entityType,
          entityId: body.entityId, agentId, runId: actorOf(ctx).runId ?? null, details: body.details ?? undefined,
        });
        ctx.state.activityWritten = true;
        return { id: String(entry.id), answer: entry };
      },
    }));
  });
};
