import type { WikiContext } from './context.ts';
import { lockFile, readIfExists } from './files.ts';
import { recordOperation } from './operations.ts';
import { indexPage, unindexPage } from './page-index.ts';
import { pageOfRootPath, wikiDir } from './paths.ts';
import { companyOf } from './scope.ts';
import type { JobPayload } from './plugin.gen.ts';

/**
 * Files changed on disk outside Keel (the host's folder watch): each page of a known space is
 * read again and indexed, or dropped from the index when it is gone. Content decides: a page
 * written through the tools and heard again changes nothing and records nothing. Each file is
 * read under the lock a tool's write holds until it commits, so a change heard while that write
 * is still indexing is read after it, never counted as a change from outside.
 */
export async function onFolderChanged(ctx: WikiContext, payload: JobPayload<'folder-changed'>): Promise<{ indexed: number; removed: number }> {
  const companyId = companyOf(ctx);
  // An operator's trigger runs the job with no payload: no change was heard.
  const changes = payload?.changes ?? [];
  const { rows } = await ctx.db.query<{ slug: string }>(`select slug from spaces where company_id = $1 and status = 'active'`, [companyId]);
  const spaces = ['default', ...rows.map((row) => row.slug)];
  let indexed = 0; let removed = 0;
  // One order for every lock this transaction takes, so two overlapping batches cannot deadlock.
  const ordered = [...changes].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const change of ordered) {
    const target = pageOfRootPath(change.path, spaces);
    if (!target) continue;
    await lockFile(ctx, companyId, `${wikiDir(target.space)}/${target.page}`);
    const content = change.kind === 'unlink' ? null : await readIfExists(ctx, change.path).catch(() => null);
    if (content === null) {
      if (await unindexPage(ctx, companyId, target.space, target.page)) {
        removed += 1;
        await recordOperation(ctx, companyId, target.space, { kind: 'external_delete', path: target.page });
      }
      continue;
    }
    const { hash, changed } = await indexPage(ctx, companyId, target.space, target.page, content);
    if (changed) {
      indexed += 1;
      await recordOperation(ctx, companyId, target.space, { kind: 'external_change', path: target.page, details: { hash } });
    }
  }
  return { indexed, removed };
}
