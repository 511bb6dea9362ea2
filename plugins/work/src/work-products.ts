import { createOnce, PluginError, respond, type RouteRequest } from '@keel/sdk/plugin';
import { workProductJson } from './artifact-json.ts';
import { lockIssueArtifacts, refreshIssueArtifacts } from './artifact-projection.ts';
import type { WorkContext } from './context.ts';
import { actorOf, rowOfCompany } from './issues.ts';
import { assignments, changedFields, updateRow } from './sql.ts';

type Body = Record<string, unknown>;

const COLUMNS = {
  type: 'type', status: 'status', reviewState: 'review_state', title: 'title', url: 'url', externalId: 'external_id',
  isPrimary: 'is_primary', metadata: 'metadata', attachmentId: 'attachment_id',
};
const FIELDS = Object.keys(COLUMNS);
const MAX_METADATA_BYTES = 16 * 1024;

/** UTF-8 length of a string (the isolate has no TextEncoder to ask). */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code < 0xdc00 && i + 1 < text.length) { bytes += 4; i++; } else bytes += 3;
  }
  return bytes;
}

/** The body's checks that a schema cannot make: metadata's size, and an attachment of the same issue. */
async function checkBody(ctx: WorkContext, issueId: string, body: Body): Promise<void> {
  if (body.metadata !== undefined && body.metadata !== null && utf8Bytes(JSON.stringify(body.metadata)) > MAX_METADATA_BYTES) {
    throw new PluginError(400, 'metadata_too_large', `metadata: at most ${MAX_METADATA_BYTES} bytes of JSON`, { field: 'metadata', limitBytes: MAX_METADATA_BYTES });
  }
  if (body.attachmentId === undefined || body.attachmentId === null) return;
  const { rows } = await ctx.db.query('select 1 from issue_attachments where id = $1 and issue_id = $2', [body.attachmentId, issueId]);
  if (!rows.length) throw new PluginError(422, 'attachment_not_found', 'attachmentId: no attachment with this id belongs to the issue', { field: 'attachmentId' });
}

/** At most one primary work product per issue: making one primary clears the others (the issue is locked). */
async function clearOtherPrimaries(ctx: WorkContext, issueId: unknown, keepId: unknown): Promise<void> {
  await ctx.db.query('update work_products set is_primary = false, updated_at = now() where issue_id = $1 and is_primary and id is distinct from $2', [issueId, keepId]);
}

/** With an Idempotency-Key, a retried create answers the work product it made (200) and writes nothing (createOnce). */
export async function createWorkProduct(req: RouteRequest, ctx: WorkContext) {
  const companyId = req.companyId!;
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'work_product', request: { issueId: req.params.issueId, body: req.body },
    load: async (id) => { const row = await rowOfCompany(ctx, 'work_products', id, companyId); return row && workProductJson(row); },
    create: () => insertWorkProduct(req, ctx),
  });
}

async function insertWorkProduct(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Body;
  const issue = await lockIssueArtifacts(ctx, req.params.issueId!, req.companyId!);
  await checkBody(ctx, String(issue.id), body);
  if (body.isPrimary === true) await clearOtherPrimaries(ctx, issue.id, null);
  const { agentId, userId } = actorOf(ctx);
  const { rows } = await ctx.db.query(
    `insert into work_products (company_id, issue_id, type, status, review_state, title, url, external_id, is_primary, metadata, attachment_id,
                                created_by_agent_id, created_by_user_id, run_id)
     values ($1, $2, $3, coalesce($4, 'active'), coalesce($5, 'none'), $6, $7, $8, coalesce($9, false), $10::jsonb, $11, $12, $13, $14) returning *`,
    [issue.company_id, issue.id, body.type, body.status ?? null, body.reviewState ?? null, body.title, body.url ?? null, body.externalId ?? null,
      body.isPrimary ?? null, body.metadata === undefined || body.metadata === null ? null : JSON.stringify(body.metadata), body.attachmentId ?? null,
      agentId, userId, ctx.invocation.runId]);
  const product = workProductJson(rows[0]!);
  await refreshIssueArtifacts(ctx, issue.id, issue.company_id);
  await ctx.activity.record({
    action: 'issue.work_product_created', entityType: 'issue', entityId: String(issue.id),
    details: { identifier: issue.identifier, workProductId: product.id, type: product.type, title: product.title, status: product.status, isPrimary: product.isPrimary },
  });
  return { id: String(product.id), answer: respond(201, product) };
}

export async function listWorkProducts(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query('select * from work_products where issue_id = $1 and company_id = $2 order by created_at, id', [req.params.issueId, req.companyId]);
  return rows.map(workProductJson);
}

export async function updateWorkProduct(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as Body;
  const companyId = req.companyId!;
  const { rows: found } = await ctx.db.query('select issue_id from work_products where id = $1 and company_id = $2', [req.params.workProductId, companyId]);
  if (!found[0]) throw new PluginError(404, 'not_found', 'Work product not found');
  // The issue's artifacts first, as every write of them takes that lock: then the product cannot change underneath.
  const issue = await lockIssueArtifacts(ctx, String(found[0].issue_id), companyId);
  const { rows: locked } = await ctx.db.query('select * from work_products where id = $1', [req.params.workProductId]);
  const current = locked[0];
  if (!current) throw new PluginError(404, 'not_found', 'Work product not found');
  await checkBody(ctx, String(issue.id), body);
  if (body.isPrimary === true) await clearOtherPrimaries(ctx, issue.id, current.id);
  const patch: Body = { ...body };
  if (patch.metadata !== undefined && patch.metadata !== null) patch.metadata = JSON.stringify(patch.metadata);
  const params: unknown[] = [current.id];
  const sets = assignments(patch, COLUMNS, params);
  const before = workProductJson(current);
  const after = workProductJson(await updateRow(ctx.db, 'work_products', current, sets, params));
  await refreshIssueArtifacts(ctx, issue.id, issue.company_id);
  const { changes, previous } = changedFields(before, after, FIELDS);
  await ctx.activity.record({
    action: 'issue.work_product_updated', entityType: 'issue', entityId: String(issue.id),
    details: { identifier: issue.identifier, workProductId: after.id, changes, previous },
  });
  return after;
}
