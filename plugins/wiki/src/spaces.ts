import { PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { ROOT, type WikiContext } from './context.ts';
import { bootstrapSpace } from './layout.ts';
import { MAINTAINER_KEY } from './managed.ts';
import { listOperations, recordOperation } from './operations.ts';
import { ingestionEnabled } from './ingestion.ts';
import { DEFAULT_SPACE } from './paths.ts';
import { captureSource } from './sources.ts';
import { companyOf, ensureDefaultSpace, listSpaces, SPACE_COLUMNS, spaceOf, type Space } from './scope.ts';

type Body = Record<string, unknown>;
const body = (req: RouteRequest) => (req.body ?? {}) as Body;

export async function spacesRoute(req: RouteRequest, ctx: WikiContext) {
  return { spaces: await listSpaces(ctx, companyOf(ctx), req.query.includeArchived === true) };
}

export async function createSpace(req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  const { slug, name, description } = body(req) as { slug: string; name: string; description?: string };
  if (slug === DEFAULT_SPACE) throw new PluginError(409, 'space_exists', 'The default space always exists');
  await ensureDefaultSpace(ctx, companyId);
  const { rows } = await ctx.db.query<Space>(
    `insert into spaces (id, company_id, slug, name, description) values (gen_random_uuid(), $1, $2, $3, $4)
     on conflict (company_id, slug) do nothing returning ${SPACE_COLUMNS}`, [companyId, slug, name, description ?? null]);
  if (!rows[0]) throw new PluginError(409, 'space_exists', `Space "${slug}" exists`);
  await recordOperation(ctx, companyId, slug, { kind: 'create_space', summary: name });
  return respond(201, rows[0]);
}

export async function updateSpace(req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  await ensureDefaultSpace(ctx, companyId);
  const space = await spaceOf(ctx, companyId, req.params.spaceSlug!);
  const { name, description } = body(req) as { name?: string; description?: string | null };
  const { rows } = await ctx.db.query<Space>(
    `update spaces set name = coalesce($3, name), description = case when $5 then $4 else description end, updated_at = now()
      where company_id = $1 and slug = $2 returning ${SPACE_COLUMNS}`,
    [companyId, space.slug, name ?? null, description ?? null, description !== undefined]);
  await recordOperation(ctx, companyId, space.slug, { kind: 'update_space', details: { name: name ?? null, description: description === undefined ? undefined : description } });
  return rows[0];
}

export async function archiveSpace(req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  const space = await spaceOf(ctx, companyId, req.params.spaceSlug!);
  if (space.slug === DEFAULT_SPACE) throw new PluginError(409, 'default_space_required', 'The default space cannot be archived');
  if (space.status === 'archived') return space;
  const { rows } = await ctx.db.query<Space>(
    `update spaces set status = 'archived', archived_at = now(), updated_at = now() where company_id = $1 and slug = $2 returning ${SPACE_COLUMNS}`, [companyId, space.slug]);
  await recordOperation(ctx, companyId, space.slug, { kind: 'archive_space' });
  return rows[0];
}

async function bootstrapOf(ctx: WikiContext, slug: string) {
  const companyId = companyOf(ctx);
  await ensureDefaultSpace(ctx, companyId);
  const space = await spaceOf(ctx, companyId, slug);
  if (space.status === 'archived') throw new PluginError(409, 'space_archived', `Space ${space.slug} is archived`);
  // The mount must be there (this throws when it is not) before anything is made for the company.
  await ctx.folders.exists(ROOT, 'AGENTS.md');
  // A company that lays out its wiki gets the maintainer (and, following it, the wiki's project,
  // skills and routines: managed.ts); one that never does gets no agent. Asked before this call
  // writes any activity: the agent is made in a transaction of its own, which writes the
  // company's activity too.
  const maintainer = await ctx.agents.provisionManaged(MAINTAINER_KEY);
  const result = await bootstrapSpace(ctx, companyId, space);
  return { space: await spaceOf(ctx, companyId, slug), ...result, maintainerAgentId: String(maintainer.id) };
}

export function bootstrapRoute(_req: RouteRequest, ctx: WikiContext) {
  return bootstrapOf(ctx, DEFAULT_SPACE);
}

export function bootstrapSpaceRoute(req: RouteRequest, ctx: WikiContext) {
  return bootstrapOf(ctx, req.params.spaceSlug!);
}

export async function captureSourceRoute(req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  const { spaceSlug, title, content, url, kind } = body(req) as { spaceSlug?: string; title: string; content: string; url?: string; kind?: string };
  await ensureDefaultSpace(ctx, companyId);
  const space = await spaceOf(ctx, companyId, spaceSlug ?? DEFAULT_SPACE);
  return respond(201, await captureSource(ctx, companyId, space, { title, content, url, kind }));
}

export async function operationsRoute(req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  const space = await spaceOf(ctx, companyId, (req.query.spaceSlug as string | undefined) ?? DEFAULT_SPACE);
  return { spaceSlug: space.slug, operations: await listOperations(ctx, companyId, space.slug, (req.query.limit as number | undefined) ?? 50) };
}

export async function overviewRoute(_req: RouteRequest, ctx: WikiContext) {
  const companyId = companyOf(ctx);
  const spaces = await listSpaces(ctx, companyId, true);
  const { rows: counts } = await ctx.db.query<{ slug: string; pages: number }>(
    'select space_slug as slug, count(*)::int as pages from pages where company_id = $1 group by space_slug', [companyId]);
  const pages = new Map(counts.map((row) => [row.slug, row.pages]));
  let folder: { configured: boolean; bootstrapped: boolean; problem: string | null };
  try {
    folder = { configured: true, bootstrapped: await ctx.folders.exists(ROOT, 'AGENTS.md') && await ctx.folders.exists(ROOT, 'wiki/index.md'), problem: null };
  } catch (error) {
    folder = { configured: false, bootstrapped: false, problem: (error as PluginError).code ?? 'folder_unavailable' };
  }
  return {
    companyId, wikiId: 'default', folderKey: ROOT, folder,
    spaces: spaces.map((space) => ({ ...space, pages: pages.get(space.slug) ?? 0 })),
    ingestion: { enabled: await ingestionEnabled(ctx, companyId) },
    recentOperations: await listOperations(ctx, companyId, DEFAULT_SPACE, 10),
  };
}
