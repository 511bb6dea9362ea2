import { PluginError } from '@keel/sdk/plugin';
import { ROOT, type WikiContext } from './context.ts';
import { notFound, readIfExists, walkFiles } from './files.ts';
import { recordOperation } from './operations.ts';
import { checkedName, rawDir } from './paths.ts';
import { toolScope, type Space } from './scope.ts';

interface ToolInput { companyId: string; wikiId: string; spaceSlug?: string }

export async function wikiListSources(input: unknown, ctx: WikiContext) {
  const { limit = 200, ...scope } = input as ToolInput & { limit?: number };
  const { space } = await toolScope(ctx, scope, { writable: false });
  const raw = rawDir(space.slug);
  const files = await walkFiles(ctx, raw, limit);
  return { spaceSlug: space.slug, sources: files.slice(0, limit).map((path) => ({ path: path.slice(raw.length + 1) })) };
}

export async function wikiReadSource(input: unknown, ctx: WikiContext) {
  const { path, ...scope } = input as ToolInput & { path: string };
  const { space } = await toolScope(ctx, scope, { writable: false });
  const name = checkedName(path, 'source');
  const content = await readIfExists(ctx, `${rawDir(space.slug)}/${name}`);
  if (content === null) throw notFound('source', name);
  return { spaceSlug: space.slug, path: name, content };
}

/** A file name for a captured source: date, slug of the title, and a counter when taken. */
export async function captureSource(ctx: WikiContext, companyId: string, space: Space, source: { title: string; content: string; url?: string; kind?: string }, options: { folder?: string; name?: string } = {}) {
  if (space.status === 'archived') throw new PluginError(409, 'space_archived', `Space ${space.slug} is archived`);
  const slug = source.title.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'source';
  const day = new Date().toISOString().slice(0, 10);
  const folder = `${rawDir(space.slug)}${options.folder ? `/${options.folder}` : ''}`;
  let name = options.name ?? `${day}-${slug}.md`;
  for (let n = 2; !options.name && await ctx.folders.exists(ROOT, `${folder}/${name}`); n += 1) name = `${day}-${slug}-${n}.md`;
  const header = [`# ${source.title}`, '', ...(source.url ? [`Source: ${source.url}`] : []), ...(source.kind ? [`Kind: ${source.kind}`] : []), `Captured: ${new Date().toISOString()}`, '', ''].join('\n');
  await ctx.folders.write(ROOT, `${folder}/${name}`, header + source.content);
  const path = `${options.folder ? `${options.folder}/` : ''}${name}`;
  await recordOperation(ctx, companyId, space.slug, { kind: 'capture_source', path, summary: source.title.slice(0, 200), details: { url: source.url ?? null, sourceKind: source.kind ?? null, characters: source.content.length } });
  return { spaceSlug: space.slug, path };
}
