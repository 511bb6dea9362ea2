import { PluginError } from '@keel/sdk/plugin';
import { DEFAULT_SPACE, SPACE_SLUG } from './paths.ts';
import type { WikiContext } from './context.ts';

/** The company's wiki: one per company, on its wiki-root folder. */
export const WIKI_ID = 'default';

export interface Space { slug: string; name: string; description: string | null; status: 'active' | 'archived'; bootstrappedAt: string | null; createdAt: string; updatedAt: string; archivedAt: string | null }

/** The company the call serves (the host checked the caller's access to it). */
export function companyOf(ctx: WikiContext): string {
  const companyId = ctx.invocation.companyId;
  if (!companyId) throw new PluginError(400, 'company_required', 'Name the company: companyId (for a tool call by a board user, also at the top of the call)');
  return companyId;
}

/**
 * The company, wiki and space a tool names. The call's company is the host's (an agent's own,
 * or the one a board caller named and may reach); the input's companyId must be that company.
 */
export async function toolScope(ctx: WikiContext, input: { companyId: string; wikiId: string; spaceSlug?: string }, options: { writable: boolean }): Promise<{ companyId: string; space: Space }> {
  const companyId = companyOf(ctx);
  if (input.companyId !== companyId) throw new PluginError(403, 'cross_company_denied', 'companyId names another company than the one this call serves');
  if (input.wikiId !== WIKI_ID) throw new PluginError(404, 'wiki_not_found', `No wiki "${input.wikiId}": a company's wiki is "${WIKI_ID}"`);
  if (options.writable) await ensureDefaultSpace(ctx, companyId);
  const space = await spaceOf(ctx, companyId, input.spaceSlug ?? DEFAULT_SPACE);
  if (options.writable && space.status === 'archived') throw new PluginError(409, 'space_archived', `Space ${space.slug} is archived`);
  return { companyId, space };
}

const SPACE_COLUMNS = `slug, name, description, status, bootstrapped_at as "bootstrappedAt", created_at as "createdAt", updated_at as "updatedAt", archived_at as "archivedAt"`;

/** The default space exists for every company from its first use. */
export async function ensureDefaultSpace(ctx: WikiContext, companyId: string): Promise<void> {
  await ctx.db.query(
    `insert into spaces (id, company_id, slug, name) values (gen_random_uuid(), $1, $2, 'Default') on conflict (company_id, slug) do nothing`,
    [companyId, DEFAULT_SPACE]);
}

export async function spaceOf(ctx: WikiContext, companyId: string, slug: string): Promise<Space> {
  if (!SPACE_SLUG.test(slug)) throw new PluginError(400, 'invalid_space_slug', `"${slug.slice(0, 60)}" is not a space slug (lower-case letters, digits and -, at most 48)`);
  const { rows } = await ctx.db.query<Space>(`select ${SPACE_COLUMNS} from spaces where company_id = $1 and slug = $2`, [companyId, slug]);
  if (rows[0]) return rows[0];
  // The default space always exists; its row is written by the first change (reads may run read-only).
  if (slug === DEFAULT_SPACE) return implicitDefault();
  throw new PluginError(404, 'space_not_found', `No space "${slug}"`);
}

export async function listSpaces(ctx: WikiContext, companyId: string, includeArchived: boolean): Promise<Space[]> {
  const { rows } = await ctx.db.query<Space>(
    `select ${SPACE_COLUMNS} from spaces where company_id = $1 and ($2 or status = 'active') order by slug = 'default' desc, slug`, [companyId, includeArchived]);
  return rows.some((row) => row.slug === DEFAULT_SPACE) ? rows : [implicitDefault(), ...rows];
}

function implicitDefault(): Space {
  return { slug: DEFAULT_SPACE, name: 'Default', description: null, status: 'active', bootstrappedAt: null, createdAt: new Date(0).toISOString(), updatedAt: new Date(0).toISOString(), archivedAt: null };
}

export { SPACE_COLUMNS };
