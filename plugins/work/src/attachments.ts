import { createOnce, PluginError, respond, type BlobDownload, type RouteRequest } from '@keel/sdk/plugin';
import { attachmentJson } from './artifact-json.ts';
import { lockIssueArtifacts, refreshIssueArtifacts } from './artifact-projection.ts';
import type { WorkContext } from './context.ts';
import { UUID_PATTERN } from './cursor.ts';
import { actorOf, rowOfCompany } from './issues.ts';

const UUID = new RegExp(`^${UUID_PATTERN}$`, 'i');

/**
 * The upload's issue, by id or identifier, in the company of the path. The kernel checked the
 * caller's access to that company only, so an issue of another company answers like an unknown
 * one (and the stored upload is deleted again, as for any failed upload call).
 */
async function issueOfCompany(ctx: WorkContext, ref: string, companyId: string) {
  const { rows } = await ctx.db.query(
    UUID.test(ref) ? 'select id from issues where id = $1 and company_id = $2' : 'select id from issues where identifier = upper($1) and company_id = $2',
    [ref, companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Issue not found');
  return lockIssueArtifacts(ctx, String(rows[0].id), companyId);
}

/**
 * The kernel has streamed the file into the blob store (type, size and sha256 checked); this
 * keeps its row. With an Idempotency-Key, a retried upload of the same file answers the
 * attachment the first one made (200); the kernel then deletes the file sent again.
 */
export async function uploadAttachment(req: RouteRequest, ctx: WorkContext) {
  const file = req.upload;
  if (!file) throw new PluginError(400, 'no_file', "Upload one file in the multipart part named 'file'");
  const companyId = req.companyId!;
  return createOnce(ctx.db, {
    key: req.headers['idempotency-key'], companyId, kind: 'attachment',
    request: { issueId: req.params.issueId, filename: file.filename, contentType: file.contentType, byteSize: file.byteSize, sha256: file.sha256 },
    load: async (id) => { const row = await rowOfCompany(ctx, 'issue_attachments', id, companyId); return row && attachmentJson(row); },
    create: () => storeAttachment(req, ctx),
  });
}

async function storeAttachment(req: RouteRequest, ctx: WorkContext) {
  const file = req.upload!;
  const companyId = req.companyId!;
  const issue = await issueOfCompany(ctx, req.params.issueId ?? '', companyId);
  const { agentId, userId } = actorOf(ctx);
  const { rows } = await ctx.db.query(
    `insert into issue_attachments (company_id, issue_id, blob_id, filename, content_type, byte_size, sha256, created_by_agent_id, created_by_user_id, run_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning *`,
    [companyId, issue.id, file.id, file.filename, file.contentType, file.byteSize, file.sha256, agentId, userId, ctx.invocation.runId]);
  const attachment = attachmentJson(rows[0]!);
  await refreshIssueArtifacts(ctx, issue.id, companyId);
  await ctx.activity.record({
    action: 'issue.attachment_added', entityType: 'issue', entityId: String(issue.id),
    details: { identifier: issue.identifier, attachmentId: attachment.id, filename: attachment.filename, contentType: attachment.contentType, byteSize: attachment.byteSize },
  });
  return { id: String(attachment.id), answer: respond(201, attachment) };
}

export async function listAttachments(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query('select * from issue_attachments where issue_id = $1 and company_id = $2 order by created_at, id', [req.params.issueId, req.companyId]);
  return rows.map(attachmentJson);
}

async function findAttachment(ctx: WorkContext, req: RouteRequest) {
  const { rows } = await ctx.db.query('select * from issue_attachments where id = $1 and company_id = $2', [req.params.attachmentId, req.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Attachment not found');
  return rows[0];
}

/**
 * Served inline where that is safe, as an attachment with `?download=true`. The kernel decides
 * the headers: HTML, SVG and anything else a browser could run go out as an attachment with
 * nosniff whatever is asked here.
 */
export async function downloadAttachment(req: RouteRequest, ctx: WorkContext): Promise<BlobDownload> {
  const attachment = await findAttachment(ctx, req);
  const answer: BlobDownload = { blob: String(attachment.blob_id), disposition: req.query.download === true ? 'attachment' : 'inline' };
  if (attachment.filename) answer.filename = String(attachment.filename);
  return answer;
}

/**
 * Deletes the row, then the blob. The blob store commits on its own, so the blob goes last: a
 * failure before it leaves both in place. Work products that pointed at the file stay, without it.
 */
export async function deleteAttachment(req: RouteRequest, ctx: WorkContext) {
  const found = await findAttachment(ctx, req);
  const issue = await lockIssueArtifacts(ctx, String(found.issue_id), req.companyId!);
  const { rows: products } = await ctx.db.query('select id from work_products where attachment_id = $1 order by created_at, id', [found.id]);
  const { rows } = await ctx.db.query('delete from issue_attachments where id = $1 returning *', [found.id]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Attachment not found');
  await refreshIssueArtifacts(ctx, issue.id, issue.company_id);
  await ctx.activity.record({
    action: 'issue.attachment_removed', entityType: 'issue', entityId: String(issue.id),
    details: { identifier: issue.identifier, attachmentId: found.id, filename: found.filename ?? null, detachedWorkProductIds: products.map((row) => String(row.id)) },
  });
  await ctx.blobs.delete(String(found.blob_id));
  return { id: found.id, deleted: true };
}
