import { PluginError, respond, type RouteRequest, workEvents } from '@keel/sdk/plugin';
import { documentJson, documentSummaryJson, revisionJson } from './artifact-json.ts';
import { lockIssueArtifacts, refreshIssueArtifacts } from './artifact-projection.ts';
import type { WorkContext } from './context.ts';
import { actorOf } from './issues.ts';
import { text } from './event-fields.ts';

type Row = Record<string, unknown>;
interface DocumentBody { body: string; title?: string | null; changeSummary?: string | null; baseRevisionId?: string | null }

const KEY = /^[a-z0-9][a-z0-9_-]*$/;
const MAX_KEY_LENGTH = 64;

/** The path's document key; path parameters are not schema-checked by the host, so it is checked here. */
function documentKey(req: RouteRequest): string {
  const key = req.params.key ?? '';
  if (key.length > MAX_KEY_LENGTH || !KEY.test(key)) {
    throw new PluginError(400, 'invalid_document_key', `key: lower-case letters, digits, '-' and '_', starting with a letter or digit, at most ${MAX_KEY_LENGTH} characters`, { field: 'key' });
  }
  return key;
}

async function findDocument(ctx: WorkContext, req: RouteRequest): Promise<Row> {
  const key = documentKey(req);
  const { rows } = await ctx.db.query('select * from issue_documents where issue_id = $1 and company_id = $2 and key = $3', [req.params.issueId, req.companyId, key]);
  if (!rows[0]) throw new PluginError(404, 'document_not_found', 'Document not found');
  return rows[0];
}

export async function listDocuments(req: RouteRequest, ctx: WorkContext) {
  const { rows } = await ctx.db.query('select * from issue_documents where issue_id = $1 and company_id = $2 order by key', [req.params.issueId, req.companyId]);
  return rows.map(documentSummaryJson);
}

export async function getDocument(req: RouteRequest, ctx: WorkContext) {
  return documentJson(await findDocument(ctx, req));
}

export async function listRevisions(req: RouteRequest, ctx: WorkContext) {
  const document = await findDocument(ctx, req);
  const { rows } = await ctx.db.query('select * from issue_document_revisions where document_id = $1 order by revision_number desc', [document.id]);
  return rows.map(revisionJson);
}

/**
 * Writes a document as a new revision. Optimistic concurrency: a write names the revision it
 * was based on (`baseRevisionId`; none for the write that creates the document), and a write
 * based on anything but the current revision answers 409 with the current one, so two writers
 * never silently overwrite each other. Writes of one issue's artifacts are serialised by their
 * lock (lockIssueArtifacts, not the issue's row), so of two writes based on the same revision
 * exactly one wins. Restoring an old
 * revision is a write of its body: history only grows.
 */
export async function putDocument(req: RouteRequest, ctx: WorkContext) {
  const body = req.body as DocumentBody;
  const key = documentKey(req);
  const issue = await lockIssueArtifacts(ctx, req.params.issueId!, req.companyId!);
  const { rows: found } = await ctx.db.query('select * from issue_documents where issue_id = $1 and key = $2', [issue.id, key]);
  const current = found[0];
  const currentRevisionId = (current?.latest_revision_id as string | undefined) ?? null;
  const base = body.baseRevisionId ? body.baseRevisionId.toLowerCase() : null;
  if (base !== currentRevisionId) {
    throw new PluginError(409, 'document_revision_conflict', current
      ? `The document is at revision ${current.latest_revision_number}, not the one this write is based on: read it again and apply the change to the current revision`
      : 'The document does not exist yet: create it without baseRevisionId',
    { currentRevisionId, currentRevisionNumber: current ? Number(current.latest_revision_number) : null });
  }
  const { agentId, userId } = actorOf(ctx);
  // An absent title keeps the current one; an explicit null clears it.
  const title = Object.hasOwn(body, 'title') ? (body.title ?? null) : ((current?.title as string | null | undefined) ?? null);
  const { rows } = current
    ? await ctx.db.query(
      `update issue_documents set title = $2, latest_body = $3, latest_revision_id = gen_random_uuid(), latest_revision_number = latest_revision_number + 1,
              updated_by_agent_id = $4, updated_by_user_id = $5, updated_at = now()
        where id = $1 returning *`, [current.id, title, body.body, agentId, userId])
    : await ctx.db.query(
      `insert into issue_documents (company_id, issue_id, key, title, latest_body, latest_revision_id, latest_revision_number,
                                    created_by_agent_id, created_by_user_id, updated_by_agent_id, updated_by_user_id)
       values ($1, $2, $3, $4, $5, gen_random_uuid(), 1, $6, $7, $6, $7) returning *`,
      [issue.company_id, issue.id, key, title, body.body, agentId, userId]);
  const document = rows[0]!;
  await refreshIssueArtifacts(ctx, issue.id, issue.company_id);
  await ctx.db.query(
    `insert into issue_document_revisions (id, company_id, document_id, revision_number, title, body, change_summary, created_by_agent_id, created_by_user_id, run_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [document.latest_revision_id, document.company_id, document.id, document.latest_revision_number, title, body.body, body.changeSummary ?? null, agentId, userId, ctx.invocation.runId]);
  const json = documentJson(document);
  await ctx.activity.record({
    action: current ? 'issue.document_updated' : 'issue.document_created', entityType: 'issue', entityId: String(issue.id),
    details: {
      identifier: issue.identifier, documentId: json.id, key, title, revisionId: json.latestRevisionId, revisionNumber: json.latestRevisionNumber,
      changeSummary: body.changeSummary ?? null,
    },
  });
  await ctx.events.publish(workEvents.issueDocumentUpdated.name, {
    issueId: text(issue.id), identifier: text(issue.identifier), documentId: text(json.id), key, revisionId: text(json.latestRevisionId),
    revisionNumber: json.latestRevisionNumber, created: !current,
  }, { entityType: 'issue', entityId: String(issue.id) });
  return respond(current ? 200 : 201, json);
}
