import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import type { WikiContext } from './context.ts';
import { recordOperation } from './operations.ts';
import { searchPages } from './page-index.ts';
import { writePage } from './pages.ts';
import { DEFAULT_SPACE } from './paths.ts';
import { companyOf, ensureDefaultSpace, spaceOf, WIKI_ID } from './scope.ts';

/** A question asked of a space: recorded, and answered with the pages that match it. */
export async function startQuery(req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  const { spaceSlug, question, limit = 10 } = req.body as { spaceSlug?: string; question: string; limit?: number };
  await ensureDefaultSpace(ctx, companyId);
  const space = await spaceOf(ctx, companyId, spaceSlug ?? DEFAULT_SPACE);
  const { rows } = await ctx.db.query<{ id: string; createdAt: string }>(
    `insert into query_sessions (id, company_id, space_slug, question, actor_type, actor_id) values (gen_random_uuid(), $1, $2, $3, $4, $5)
     returning id, created_at as "createdAt"`,
    [companyId, space.slug, question, ctx.invocation.actor.type, ctx.invocation.actor.id]);
  const session = rows[0]!;
  await recordOperation(ctx, companyId, space.slug, { kind: 'start_query', summary: question.slice(0, 200), details: { sessionId: session.id } });
  const results = await searchPages(ctx, companyId, space.slug, question, limit, { any: true });
  return respond(201, { session: { id: session.id, spaceSlug: space.slug, question, filedPath: null, createdAt: session.createdAt }, results });
}

/** Files an answer as a page (stale-write protected like wiki_write_page), linked to its query session when named. */
export async function fileAsPage(req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  const { spaceSlug, sessionId, path, content, expectedHash } = req.body as { spaceSlug?: string; sessionId?: string; path: string; content: string; expectedHash?: string | null };
  let space = spaceSlug ?? DEFAULT_SPACE;
  if (sessionId) {
    const { rows } = await ctx.db.query<{ space_slug: string }>('select space_slug from query_sessions where id = $1 and company_id = $2', [sessionId, companyId]);
    if (!rows[0]) throw new PluginError(404, 'query_session_not_found', 'No query session with this id');
    if (spaceSlug && spaceSlug !== rows[0].space_slug) throw new PluginError(409, 'space_mismatch', `The query session belongs to space ${rows[0].space_slug}`);
    space = rows[0].space_slug;
  }
  const written = await writePage(ctx, { companyId, wikiId: WIKI_ID, spaceSlug: space, path, content, expectedHash, summary: sessionId ? `filed from query session ${sessionId}` : 'filed as page' }, 'file_as_page');
  if (sessionId) await ctx.db.query('update query_sessions set filed_path = $3 where id = $1 and company_id = $2', [sessionId, companyId, written.path]);
  return respond(written.created ? 201 : 200, { ...written, sessionId: sessionId ?? null });
}
