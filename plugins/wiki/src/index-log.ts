import { ROOT, type WikiContext } from './context.ts';
import { lockFile, readIfExists } from './files.ts';
import { recordOperation } from './operations.ts';
import { indexPage } from './page-index.ts';
import { wikiDir } from './paths.ts';
import { toolScope } from './scope.ts';

interface ToolInput { companyId: string; wikiId: string; spaceSlug?: string }

/** wiki/index.md: the content given, or a listing of every page grouped by its folder. */
export async function wikiUpdateIndex(input: unknown, ctx: WikiContext) {
  const { content, ...scope } = input as ToolInput & { content?: string };
  const { companyId, space } = await toolScope(ctx, scope, { writable: true });
  const file = `${wikiDir(space.slug)}/index.md`;
  await lockFile(ctx, companyId, file);
  let text = content;
  if (text === undefined) {
    const { rows } = await ctx.db.query<{ path: string; title: string }>(
      `select path, title from pages where company_id = $1 and space_slug = $2 and path not in ('index.md', 'log.md') order by path limit 20000`, [companyId, space.slug]);
    const groups = new Map<string, string[]>();
    for (const row of rows) {
      const folder = row.path.includes('/') ? row.path.slice(0, row.path.lastIndexOf('/')) : '';
      groups.set(folder, [...(groups.get(folder) ?? []), `- [${row.title.replace(/[[\]]/g, '')}](${row.path.split('/').map(encodeURIComponent).join('/')})`]);
    }
    const sections = [...groups].map(([folder, lines]) => `## ${folder || 'Pages'}\n\n${lines.join('\n')}\n`);
    text = `# ${space.name} index\n\n${rows.length} pages.\n\n${sections.join('\n')}`;
  }
  const before = await readIfExists(ctx, file);
  if (before !== text) await ctx.folders.write(ROOT, file, text);
  const { hash } = await indexPage(ctx, companyId, space.slug, 'index.md', text);
  if (before !== text) await recordOperation(ctx, companyId, space.slug, { kind: 'update_index', path: 'index.md', details: { hash } });
  return { spaceSlug: space.slug, path: 'index.md', hash, changed: before !== text };
}

/** One dated entry at the end of wiki/log.md (created when missing). */
export async function wikiAppendLog(input: unknown, ctx: WikiContext) {
  const { entry, ...scope } = input as ToolInput & { entry: string };
  const { companyId, space } = await toolScope(ctx, scope, { writable: true });
  const file = `${wikiDir(space.slug)}/log.md`;
  await lockFile(ctx, companyId, file);
  const before = (await readIfExists(ctx, file)) ?? '# Log\n';
  const line = `\n## ${new Date().toISOString()}\n\n${entry.trim()}\n`;
  const text = `${before.replace(/\n*$/, '\n')}${line}`;
  await ctx.folders.write(ROOT, file, text);
  const { hash } = await indexPage(ctx, companyId, space.slug, 'log.md', text);
  await recordOperation(ctx, companyId, space.slug, { kind: 'append_log', path: 'log.md', summary: entry.trim().slice(0, 200), details: { hash } });
  return { spaceSlug: space.slug, path: 'log.md', hash };
}
