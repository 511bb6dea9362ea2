import type { WikiContext } from './context.ts';
import { readIfExists, walkFiles, writeIfMissing } from './files.ts';
import { recordOperation } from './operations.ts';
import { indexPage, unindexPage } from './page-index.ts';
import { DEFAULT_SPACE, PAGE_FOLDERS, rawDir, wikiDir } from './paths.ts';
import type { Space } from './scope.ts';

const AGENTS_MD = `# Wiki maintainer instructions

This folder is a company knowledge wiki kept by agents and people together.

- Pages live in \`wiki/\` (\`sources/\`, \`projects/\`, \`entities/\`, \`concepts/\`, \`synthesis/\`);
  raw material lives in \`raw/\` and is never edited, only captured.
- Read a page (wiki_read_page) before changing it and pass its hash as \`expectedHash\` to
  wiki_write_page: a page someone changed meanwhile is not overwritten.
- Link pages with [[page-name]] or markdown links; keep \`wiki/index.md\` current (wiki_update_index)
  and record every change in \`wiki/log.md\` (wiki_append_log).
- This file and IDEA.md are control files: tools never write them.
`;

const IDEA_MD = `# What this wiki is for

Describe here what the company wants this wiki to know and keep: its projects, the people and
systems it works with, the concepts it relies on, and the questions it is asked most.
`;

function indexMd(space: Space): string {
  return `# ${space.slug === DEFAULT_SPACE ? 'Wiki' : space.name} index\n\nNo pages yet.\n`;
}

const LOG_MD = '# Log\n\nChanges to this wiki, newest last.\n';

/**
 * Lays out the wiki root (control files) and a space (wiki/ with its folders, index and log,
 * raw/), writing only what is missing, then indexes the space's pages as they are on disk.
 * Empty folders are kept by a hidden `.keep` file (the folder capability writes files only).
 */
export async function bootstrapSpace(ctx: WikiContext, companyId: string, space: Space): Promise<{ created: string[]; indexed: number; removed: number }> {
  const created: string[] = [];
  const ensure = async (path: string, content: string) => { if (await writeIfMissing(ctx, path, content)) created.push(path); };
  await ensure('AGENTS.md', AGENTS_MD);
  await ensure('IDEA.md', IDEA_MD);
  const wiki = wikiDir(space.slug);
  await ensure(`${wiki}/index.md`, indexMd(space));
  await ensure(`${wiki}/log.md`, LOG_MD);
  for (const folder of PAGE_FOLDERS) await ensure(`${wiki}/${folder}/.keep`, '');
  await ensure(`${rawDir(space.slug)}/.keep`, '');
  const { indexed, removed } = await reindexSpace(ctx, companyId, space.slug);
  await ctx.db.query('update spaces set bootstrapped_at = coalesce(bootstrapped_at, now()), updated_at = now() where company_id = $1 and slug = $2', [companyId, space.slug]);
  await recordOperation(ctx, companyId, space.slug, { kind: 'bootstrap', summary: `created ${created.length} files, indexed ${indexed} pages`, details: { created, indexed, removed } });
  return { created: created.filter((path) => !path.endsWith('/.keep')), indexed, removed };
}

/** Makes the index of a space match its files: every .md page read and indexed, rows of files that are gone removed. */
export async function reindexSpace(ctx: WikiContext, companyId: string, space: string): Promise<{ indexed: number; removed: number }> {
  const wiki = wikiDir(space);
  const files = (await walkFiles(ctx, wiki)).filter((path) => path.toLowerCase().endsWith('.md'));
  const pages = new Set<string>();
  let indexed = 0;
  for (const file of files) {
    const content = await readIfExists(ctx, file);
    if (content === null) continue;
    const page = file.slice(wiki.length + 1);
    pages.add(page);
    if ((await indexPage(ctx, companyId, space, page, content)).changed) indexed += 1;
  }
  const { rows } = await ctx.db.query<{ path: string }>('select path from pages where company_id = $1 and space_slug = $2', [companyId, space]);
  let removed = 0;
  for (const { path } of rows) {
    if (!pages.has(path) && await unindexPage(ctx, companyId, space, path)) removed += 1;
  }
  return { indexed, removed };
}
