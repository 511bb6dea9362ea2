import type { WorkContext } from './context.ts';

/**
 * A deleted company's work goes with it (at least once: deleting twice deletes nothing more).
 * Children first; attachments' blobs went with the company in the kernel's own delete.
 */
export async function onCompanyDeleted(payload: Record<string, unknown>, ctx: WorkContext): Promise<void> {
  const companyId = String(payload.companyId ?? '');
  if (!companyId) return;
  for (const table of ['inbox_reads', 'idempotency_keys', 'feedback_traces', 'project_holds', 'artifacts', 'artifact_rollups', 'work_products', 'issue_attachments', 'issue_document_revisions', 'issue_documents', 'issue_comments', 'issue_blockers', 'issues', 'projects', 'goals']) {
    await ctx.db.query(`delete from ${table} where company_id = $1`, [companyId]);
  }
}
