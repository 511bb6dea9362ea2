import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import type { Row, SummariesContext } from './context.ts';
import { loadTask } from './generate.ts';
import { documentJson, revisionJson, slotJson } from './json.ts';
import { findSlot, resolveSlotRequest, type Selector } from './selector.ts';
import { summarizerOf } from './summarizer.ts';

interface WriteBody { markdown: string; title?: string | null; changeSummary?: string | null; baseRevisionId?: string | null; generationIssueId?: string | null; model?: string | null }

const forbidden = (message: string, code: string) => new PluginError(403, code, message);

/**
 * The write rules, in order, each a 403: the caller is the company's summarizer; it names a
 * generation task; that task is the slot's current one (or one it had before: that write is
 * superseded, answered 409 once the rest holds); the task exists; it was made for this slot
 * (the link stored at generation); it is assigned to the caller; the caller's run holds it.
 * Answers whether the task was superseded.
 */
async function checkWriter(ctx: SummariesContext, sel: Selector, slot: Row | null, body: WriteBody): Promise<{ superseded: boolean }> {
  const actor = ctx.invocation.actor;
  const summarizer = await summarizerOf(ctx);
  if (actor.type !== 'agent' || !actor.agentId || summarizer.agentId !== actor.agentId) {
    throw forbidden('Only the Summarizer built-in agent may write summaries', 'summarizer_only');
  }
  const issueId = body.generationIssueId ?? null;
  if (!issueId) throw forbidden('Summary writes must identify the active generation task', 'generation_task_required');
  const { rows } = await ctx.db.query('select slot_id from summary_generations where issue_id = $1 and company_id = $2', [issueId, sel.companyId]);
  const linkedSlot = rows[0]?.slot_id ?? null;
  const current = slot?.generating_issue_id === issueId;
  const superseded = !current && slot !== null && linkedSlot === slot.id;
  if (!current && !superseded) throw forbidden('Summary write does not match the active generation task', 'generation_task_mismatch');
  const task = await loadTask(ctx, issueId);
  if (!task) throw forbidden('Linked generation task not found', 'generation_task_not_found');
  if (linkedSlot !== slot!.id) throw forbidden('Generation task does not target this summary slot', 'generation_task_wrong_slot');
  if (task.assigneeAgentId !== actor.agentId) throw forbidden('Generation task is not assigned to this agent', 'generation_task_not_assigned');
  const runId = ctx.invocation.runId;
  if (!runId || (task.checkoutRunId !== runId && task.executionRunId !== runId)) {
    throw forbidden('Summary write must run from the linked generation task', 'generation_run_required');
  }
  return { superseded };
}

/**
 * PUT .../{scopeKind}/{slotKey}: the summarizer's write from its run of the slot's generation
 * task. Appends a revision (the document is made by the first), and settles the slot: idle, no
 * failure, no task in flight, stamped with the time, the writer and the model.
 */
export async function writeSummary(req: RouteRequest, ctx: SummariesContext) {
  const { sel } = await resolveSlotRequest(req, ctx);
  const body = req.body as WriteBody;
  const { superseded } = await checkWriter(ctx, sel, await findSlot(ctx, sel), body);
  // Checked again under the slot's lock: a generation that took the slot meanwhile wins.
  const slot = await findSlot(ctx, sel, true);
  if (superseded || !slot || slot.generating_issue_id !== body.generationIssueId) {
    throw new PluginError(409, 'summary_generation_superseded', 'Summary generation was superseded by a newer task');
  }
  const existing = slot.document_id ? (await ctx.db.query('select * from summary_documents where id = $1 for update', [slot.document_id])).rows[0] : undefined;
  if (existing && body.baseRevisionId && body.baseRevisionId !== existing.latest_revision_id) {
    throw new PluginError(409, 'summary_revision_conflict', 'Summary was updated by someone else', { currentRevisionId: existing.latest_revision_id ?? null });
  }
  const agentId = ctx.invocation.actor.agentId;
  const title = body.title ?? null;
  const number = existing ? Number(existing.latest_revision_number) + 1 : 1;
  const documentId = existing
    ? String(existing.id)
    : String((await ctx.db.query(
      `insert into summary_documents (company_id, slot_id, title, body, latest_revision_number, created_by_agent_id, updated_by_agent_id)
       values ($1, $2, $3, $4, 1, $5, $5) returning id`, [sel.companyId, slot.id, title, body.markdown, agentId])).rows[0]!.id);
  const revision = (await ctx.db.query(
    `insert into summary_revisions (company_id, document_id, revision_number, title, body, change_summary, created_by_agent_id, created_by_run_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8) returning *`,
    [sel.companyId, documentId, number, title, body.markdown, body.changeSummary ?? null, agentId, ctx.invocation.runId])).rows[0]!;
  const document = (await ctx.db.query(
    `update summary_documents set title = $2, body = $3, latest_revision_id = $4, latest_revision_number = $5, updated_by_agent_id = $6, updated_at = now()
      where id = $1 returning *`, [documentId, title, body.markdown, revision.id, number, agentId])).rows[0]!;
  const updated = (await ctx.db.query(
    `update summary_slots set document_id = $2, status = 'idle', failure_reason = null, generating_issue_id = null,
            last_generated_at = now(), last_generated_by_agent_id = $3, last_model = $4, updated_at = now()
      where id = $1 returning *`, [slot.id, documentId, agentId, body.model ?? null])).rows[0]!;
  await ctx.activity.record({
    action: 'summary_slot.write', entityType: 'summary_slot', entityId: String(slot.id),
    details: { scopeKind: sel.scopeKind, scopeId: sel.scopeId, slotKey: sel.slotKey, documentId, revisionId: revision.id, revisionNumber: number },
  });
  return { slot: slotJson(updated), document: documentJson(document), revision: revisionJson(revision) };
}
