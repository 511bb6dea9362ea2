import type { WikiContext } from './context.ts';

export interface Operation { kind: string; path?: string | null; summary?: string | null; details?: Record<string, unknown> }

/** Records a change in the space's history and the kernel's activity log, in the call's transaction. */
export async function recordOperation(ctx: WikiContext, companyId: string, space: string, operation: Operation): Promise<string> {
  const actor = ctx.invocation.actor;
  const { rows } = await ctx.db.query<{ id: string }>(
    `insert into operations (id, company_id, space_slug, kind, path, summary, actor_type, actor_id, details)
     values (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8::jsonb) returning id`,
    [companyId, space, operation.kind, operation.path ?? null, operation.summary ?? null, actor.type, actor.id, JSON.stringify(operation.details ?? {})]);
  const id = rows[0]!.id;
  await ctx.activity.record({
    action: `wiki.${operation.kind}`, entityType: 'wiki_operation', entityId: id,
    details: { spaceSlug: space, path: operation.path ?? null, ...(operation.details ?? {}) },
  });
  return id;
}

export async function listOperations(ctx: WikiContext, companyId: string, space: string, limit: number): Promise<unknown[]> {
  const { rows } = await ctx.db.query(
    `select id, space_slug as "spaceSlug", kind, path, summary, actor_type as "actorType", actor_id as "actorId", details, created_at as "createdAt"
       from operations where company_id = $1 and space_slug = $2 order by created_at desc, id limit $3`,
    [companyId, space, limit]);
  return rows;
}
