import type { RouteRequest } from '@keel/sdk/plugin';
import type { SummariesContext } from './context.ts';
import { loadTask } from './generate.ts';
import { documentJson, revisionJson, slotJson, taskRef } from './json.ts';
import { findSlot, resolveSlotRequest } from './selector.ts';

/** Revisions the list answers, newest first. */
export const REVISION_LIMIT = 20;

/** GET .../{scopeKind}/{slotKey}: the slot, its document and its task in flight; nulls for a slot never touched. */
export async function getSlot(req: RouteRequest, ctx: SummariesContext) {
  const { sel } = await resolveSlotRequest(req, ctx);
  const slot = await findSlot(ctx, sel);
  if (!slot) return { slot: null, document: null, generatingIssue: null };
  const document = slot.document_id ? (await ctx.db.query('select * from summary_documents where id = $1', [slot.document_id])).rows[0] : undefined;
  const task = slot.generating_issue_id ? await loadTask(ctx, String(slot.generating_issue_id)) : null;
  return { slot: slotJson(slot), document: document ? documentJson(document) : null, generatingIssue: task ? taskRef(task) : null };
}

/** GET .../revisions: the slot and its latest 20 revisions, newest first (empty without a document). */
export async function listRevisions(req: RouteRequest, ctx: SummariesContext) {
  const { sel } = await resolveSlotRequest(req, ctx);
  const slot = await findSlot(ctx, sel);
  if (!slot) return { slot: null, revisions: [] };
  const { rows } = slot.document_id
    ? await ctx.db.query('select * from summary_revisions where document_id = $1 order by revision_number desc limit $2', [slot.document_id, REVISION_LIMIT])
    : { rows: [] };
  return { slot: slotJson(slot), revisions: rows.map(revisionJson) };
}
