import type { WikiContext } from './context.ts';
import { linksOf, pageKey, titleOf } from './markdown.ts';

export interface IndexedPage { path: string; title: string; hash: string; size: number; updatedAt: string }

/** sha256 of the text as UTF-8, hex: the hash callers pass back as expectedHash. */
export async function hashOf(ctx: WikiContext, content: string): Promise<string> {
  const { rows } = await ctx.db.query<{ hash: string }>(`select encode(sha256(convert_to($1, 'UTF8')), 'hex') as hash`, [content]);
  return rows[0]!.hash;
}

/**
 * Puts a page's content into the index (title, body, hash, links); answers the hash and
 * whether anything changed (a change seen again, or the page's own write heard by the watch,
 * changes nothing).
 */
export async function indexPage(ctx: WikiContext, companyId: string, space: string, path: string, content: string): Promise<{ hash: string; changed: boolean }> {
  const { rows } = await ctx.db.query<{ hash: string; changed: boolean }>(
    `with incoming as (select encode(sha256(convert_to($4, 'UTF8')), 'hex') as hash),
          previous as (select hash from pages where company_id = $1 and space_slug = $2 and path = $3),
          written as (
            insert into pages (company_id, space_slug, path, title, body, hash, size)
            select $1, $2, $3, $5, $4, incoming.hash, octet_length(convert_to($4, 'UTF8')) from incoming
            on conflict (company_id, space_slug, path) do update set title = excluded.title, body = excluded.body, hash = excluded.hash, size = excluded.size, updated_at = now()
              where pages.hash is distinct from excluded.hash
            returning hash)
     select incoming.hash, exists (select 1 from written) as changed from incoming`,
    [companyId, space, path, content, titleOf(path, content)]);
  const { hash, changed } = rows[0]!;
  if (changed) {
    await ctx.db.query('delete from links where company_id = $1 and space_slug = $2 and source_path = $3', [companyId, space, path]);
    const links = linksOf(path, content).slice(0, 1000);
    if (links.length) {
      await ctx.db.query(
        `insert into links (company_id, space_slug, source_path, target_path, target_key)
         select $1, $2, $3, link->>'targetPath', link->>'targetKey' from jsonb_array_elements($4::jsonb) as link`,
        [companyId, space, path, JSON.stringify(links)]);
    }
  }
  return { hash, changed };
}

export async function unindexPage(ctx: WikiContext, companyId: string, space: string, path: string): Promise<boolean> {
  await ctx.db.query('delete from links where company_id = $1 and space_slug = $2 and source_path = $3', [companyId, space, path]);
  const { rowCount } = await ctx.db.query('delete from pages where company_id = $1 and space_slug = $2 and path = $3', [companyId, space, path]);
  return rowCount > 0;
}

/** Search terms as a prefix query: every word must match (a word's start is enough). */
function tsQueryOf(query: string, any: boolean): string | null {
  const words = query.toLowerCase().match(/[\p{L}\p{N}_]+/gu)?.slice(0, 16) ?? [];
  return words.length ? words.map((word) => `${word}:*`).join(any ? ' | ' : ' & ') : null;
}

/** Pages matching every word of the query (or, with `any`, a question's words: any of them, the most matches first). */
export async function searchPages(ctx: WikiContext, companyId: string, space: string, query: string, limit: number, options: { any?: boolean } = {}): Promise<Array<{ path: string; title: string; hash: string; score: number; snippet: string }>> {
  const tsquery = tsQueryOf(query, options.any ?? false);
  if (!tsquery) return [];
  // The best `limit` matches are found through the GIN index first; headlines are built for those only.
  const { rows } = await ctx.db.query<{ path: string; title: string; hash: string; score: number; snippet: string }>(
    `with q as (select to_tsquery('simple', $3) as query),
          best as (
            select p.path, p.title, p.hash, p.body, ts_rank(p.search, q.query) as score
              from pages p, q where p.company_id = $1 and p.space_slug = $2 and p.search @@ q.query
             order by score desc, p.path limit $4)
     select path, title, hash, score::float8 as score,
            ts_headline('simple', left(body, 20000), q.query, 'StartSel=**, StopSel=**, MaxWords=30, MinWords=10, MaxFragments=1') as snippet
       from best, q order by score desc, path`,
    [companyId, space, tsquery, limit]);
  return rows;
}

export async function listPages(ctx: WikiContext, companyId: string, space: string, prefix: string | undefined, limit: number, offset: number): Promise<{ pages: IndexedPage[]; total: number }> {
  const pattern = prefix ? `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : '%';
  const { rows } = await ctx.db.query<IndexedPage & { total: number }>(
    `select path, title, hash, size, updated_at as "updatedAt", count(*) over ()::int as total
       from pages where company_id = $1 and space_slug = $2 and path like $3 order by path limit $4 offset $5`,
    [companyId, space, pattern, limit, offset]);
  return { pages: rows.map(({ total: _total, ...page }) => page), total: rows[0]?.total ?? 0 };
}

export async function backlinksOf(ctx: WikiContext, companyId: string, space: string, path: string): Promise<Array<{ path: string; title: string }>> {
  const { rows } = await ctx.db.query<{ path: string; title: string }>(
    `select distinct p.path, p.title from links l join pages p on p.company_id = l.company_id and p.space_slug = l.space_slug and p.path = l.source_path
      where l.company_id = $1 and l.space_slug = $2 and (l.target_path = $3 or l.target_key = $4) and l.source_path <> $3
      order by p.path`,
    [companyId, space, path, pageKey(path)]);
  return rows;
}

export async function indexedHash(ctx: WikiContext, companyId: string, space: string, path: string): Promise<string | null> {
  const { rows } = await ctx.db.query<{ hash: string }>('select hash from pages where company_id = $1 and space_slug = $2 and path = $3', [companyId, space, path]);
  return rows[0]?.hash ?? null;
}
