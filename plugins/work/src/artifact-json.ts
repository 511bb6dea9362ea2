import { time } from './json.ts';

/** Documents, attachments and work products as the API shows them. */
type Row = Record<string, unknown>;

/** Where an attachment's bytes are served (the kernel streams them with safe headers). */
export const attachmentContentPath = (attachmentId: unknown): string => `/api/attachments/${String(attachmentId)}/content`;

/** A document in a list: no body (a body may be half a megabyte). */
export function documentSummaryJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, issueId: row.issue_id, key: row.key, title: row.title ?? null, format: row.format,
    latestRevisionId: row.latest_revision_id, latestRevisionNumber: Number(row.latest_revision_number),
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function documentJson(row: Row) {
  return {
    ...documentSummaryJson(row), body: row.latest_body,
    createdByAgentId: row.created_by_agent_id ?? null, createdByUserId: row.created_by_user_id ?? null,
    updatedByAgentId: row.updated_by_agent_id ?? null, updatedByUserId: row.updated_by_user_id ?? null,
  };
}

export function revisionJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, documentId: row.document_id, revisionNumber: Number(row.revision_number), title: row.title ?? null,
    body: row.body, changeSummary: row.change_summary ?? null, createdByAgentId: row.created_by_agent_id ?? null,
    createdByUserId: row.created_by_user_id ?? null, runId: row.run_id ?? null, createdAt: time(row.created_at),
  };
}

export function attachmentJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, issueId: row.issue_id, filename: row.filename ?? null, contentType: row.content_type,
    byteSize: Number(row.byte_size), sha256: row.sha256, contentPath: attachmentContentPath(row.id),
    createdByAgentId: row.created_by_agent_id ?? null, createdByUserId: row.created_by_user_id ?? null, runId: row.run_id ?? null,
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}

export function workProductJson(row: Row) {
  return {
    id: row.id, companyId: row.company_id, issueId: row.issue_id, type: row.type, status: row.status, reviewState: row.review_state,
    title: row.title, url: row.url ?? null, externalId: row.external_id ?? null, isPrimary: row.is_primary === true,
    metadata: row.metadata ?? null, attachmentId: row.attachment_id ?? null,
    contentPath: row.attachment_id ? attachmentContentPath(row.attachment_id) : null,
    createdByAgentId: row.created_by_agent_id ?? null, createdByUserId: row.created_by_user_id ?? null, runId: row.run_id ?? null,
    createdAt: time(row.created_at), updatedAt: time(row.updated_at),
  };
}
