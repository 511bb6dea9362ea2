import type { RouteRequest } from '@keel/sdk/plugin';
import { boardUser, collectItems, INBOX_KINDS, type BoardInboxItem, type InboxKind } from './board-inbox.ts';
import type { WorkContext } from './context.ts';
import { list } from './sql.ts';

interface Counts { total: number; unread: number; byKind: Record<InboxKind, { total: number; unread: number }> }

/** The user's read marks among these items (one query, whatever their number). */
async function readIds(ctx: WorkContext, companyId: string, userId: string, items: BoardInboxItem[]): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const { rows } = await ctx.db.query(
    `select item_id from inbox_reads where company_id = $1 and user_id = $2 and item_id = any(${list(3, 'text')})`,
    [companyId, userId, items.map((item) => item.id)]);
  return new Set(rows.map((row) => String(row.item_id)));
}

function countsOf(items: Array<BoardInboxItem & { read: boolean }>): Counts {
  const byKind = Object.fromEntries(INBOX_KINDS.map((kind) => [kind, { total: 0, unread: 0 }])) as Counts['byKind'];
  for (const item of items) {
    byKind[item.kind].total += 1;
    if (!item.read) byKind[item.kind].unread += 1;
  }
  return { total: items.length, unread: items.filter((item) => !item.read).length, byKind };
}

/** The inbox as the caller sees it: every item with whether the caller read it, and the counts. */
async function inboxOf(ctx: WorkContext, companyId: string, userId: string, handle: string | null) {
  const items = await collectItems(ctx, companyId, userId, handle);
  const read = await readIds(ctx, companyId, userId, items);
  const answered = items.map((item) => ({ ...item, read: read.has(item.id) }));
  return { items: answered, counts: countsOf(answered) };
}

/**
 * GET /api/companies/:companyId/inbox: what needs the calling board user in the company. A
 * read: it writes nothing.
 */
export async function getBoardInbox(req: RouteRequest, ctx: WorkContext) {
  const { userId, handle } = await boardUser(ctx);
  const inbox = await inboxOf(ctx, req.companyId!, userId, handle);
  return { userId, mentionHandle: handle, ...inbox };
}

/**
 * POST /api/companies/:companyId/inbox/read {itemIds}: marks these items read for the caller
 * (again is a no-op). Ids of items the inbox does not show now are kept too: a mark names an
 * item, it does not prove it exists.
 */
export async function markInboxRead(req: RouteRequest, ctx: WorkContext) {
  const { userId, handle } = await boardUser(ctx);
  const { itemIds } = req.body as { itemIds: string[] };
  const companyId = req.companyId!;
  await ctx.db.query(
    `insert into inbox_reads (company_id, user_id, item_id) select $1::uuid, $2::text, unnest(${list(3, 'text')}) on conflict do nothing`,
    [companyId, userId, [...new Set(itemIds)]]);
  const { counts } = await inboxOf(ctx, companyId, userId, handle);
  return { marked: new Set(itemIds).size, counts };
}

/** POST /api/companies/:companyId/inbox/read-all: marks every item the caller's inbox shows now read. */
export async function markInboxAllRead(req: RouteRequest, ctx: WorkContext) {
  const { userId, handle } = await boardUser(ctx);
  const companyId = req.companyId!;
  const items = await collectItems(ctx, companyId, userId, handle);
  if (items.length > 0) {
    await ctx.db.query(
      `insert into inbox_reads (company_id, user_id, item_id) select $1::uuid, $2::text, unnest(${list(3, 'text')}) on conflict do nothing`,
      [companyId, userId, items.map((item) => item.id)]);
  }
  const { counts } = await inboxOf(ctx, companyId, userId, handle);
  return { marked: items.length, counts };
}
