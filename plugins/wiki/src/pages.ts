import { PluginError } from '@keel/sdk/plugin';
import { ROOT, type WikiContext } from './context.ts';
import { lockFile, notFound, readIfExists } from './files.ts';
import { recordOperation } from './operations.ts';
import { backlinksOf, hashOf, indexPage, listPages, searchPages } from './page-index.ts';
import { checkedName, wikiDir, writablePage } from './paths.ts';
import { toolScope } from './scope.ts';

interface ToolInput { companyId: string; wikiId: string; spaceSlug?: string }
type PageInput = ToolInput & { path: string };
type WriteInput = PageInput & { content: string; expectedHash?: string | null; summary?: string };

export async function wikiSearch(input: unknown, ctx: WikiContext) {
  const { query, limit = 20, ...scope } = input as ToolInput & { query: string; limit?: number };
  const { companyId, space } = await toolScope(ctx, scope, { writable: false });
  return { spaceSlug: space.slug, query, results: await searchPages(ctx, companyId, space.slug, query, limit) };
}

export async function wikiListPages(input: unknown, ctx: WikiContext) {
  const { prefix, limit = 200, offset = 0, ...scope } = input as ToolInput & { prefix?: string; limit?: number; offset?: number };
  const { companyId, space } = await toolScope(ctx, scope, { writable: false });
  return { spaceSlug: space.slug, ...await listPages(ctx, companyId, space.slug, prefix, limit, offset) };
}

export async function wikiReadPage(input: unknown, ctx: WikiContext) {
  const { path, ...scope } = input as PageInput;
  const { companyId, space } = await toolScope(ctx, scope, { writable: false });
  const page = checkedName(path, 'page');
  const content = await readIfExists(ctx, `${wikiDir(space.slug)}/${page}`);
  if (content === null) throw notFound('page', page);
  return { spaceSlug: space.slug, path: page, content, hash: await hashOf(ctx, content), backlinks: await backlinksOf(ctx, companyId, space.slug, page) };
}

/**
 * Writes a page and indexes it in the same call. With `expectedHash` the write happens only if
 * the file on disk still has that content (null: only if there is no file); otherwise 409
 * stale_write says the current hash, and nothing changes.
 */
export async function writePage(ctx: WikiContext, input: WriteInput, kind = 'write_page'): Promise<{ spaceSlug: string; path: string; hash: string; previousHash: string | null; created: boolean; changed: boolean }> {
  const { path, content, expectedHash, summary, ...scope } = input;
  const { companyId, space } = await toolScope(ctx, scope, { writable: true });
  const page = writablePage(path);
  const file = `${wikiDir(space.slug)}/${page}`;
  await lockFile(ctx, companyId, file);
  const current = await readIfExists(ctx, file);
  const previousHash = current === null ? null : await hashOf(ctx, current);
  if (expectedHash !== undefined && expectedHash !== previousHash) {
    throw new PluginError(409, 'stale_write', previousHash === null
      ? `${page} does not exist (expectedHash ${expectedHash}); read the space again`
      : `${page} changed since it was read: its current hash is ${previousHash}`, { path: page, expectedHash, currentHash: previousHash });
  }
  if (current !== content) await ctx.folders.write(ROOT, file, content);
  const { hash, changed } = await indexPage(ctx, companyId, space.slug, page, content);
  if (current !== content) {
    await recordOperation(ctx, companyId, space.slug, { kind, path: page, summary: summary ?? null, details: { hash, previousHash } });
  }
  return { spaceSlug: space.slug, path: page, hash, previousHash, created: current === null, changed: changed || current !== content };
}

export function wikiWritePage(input: unknown, ctx: WikiContext) {
  return writePage(ctx, input as WriteInput);
}

/** What a write would do: the hashes and a line diff. Nothing is written or recorded. */
export async function wikiProposePatch(input: unknown, ctx: WikiContext) {
  const { path, content, ...scope } = input as PageInput & { content: string };
  const { space } = await toolScope(ctx, scope, { writable: false });
  const page = writablePage(path);
  const current = await readIfExists(ctx, `${wikiDir(space.slug)}/${page}`);
  return {
    spaceSlug: space.slug, path: page, applied: false,
    currentHash: current === null ? null : await hashOf(ctx, current),
    proposedHash: await hashOf(ctx, content),
    create: current === null,
    diff: lineDiff(current ?? '', content),
  };
}

/** A short unified-style diff by lines (common prefix and suffix trimmed). */
function lineDiff(before: string, after: string): string {
  const a = before === '' ? [] : before.split('\n');
  const b = after === '' ? [] : after.split('\n');
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start += 1;
  let endA = a.length; let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA -= 1; endB -= 1; }
  if (start === endA && start === endB) return '';
  const lines = [`@@ -${start + 1},${endA - start} +${start + 1},${endB - start} @@`, ...a.slice(start, endA).map((line) => `-${line}`), ...b.slice(start, endB).map((line) => `+${line}`)];
  return lines.slice(0, 2000).join('\n');
}

export async function wikiListBacklinks(input: unknown, ctx: WikiContext) {
  const { path, ...scope } = input as PageInput;
  const { companyId, space } = await toolScope(ctx, scope, { writable: false });
  const page = checkedName(path, 'page');
  return { spaceSlug: space.slug, path: page, backlinks: await backlinksOf(ctx, companyId, space.slug, page) };
}
