import { PluginError } from '@keel/sdk/plugin';
import type { WorkContext } from './context.ts';
import { time } from './json.ts';

type Row = Record<string, unknown>;
export type TargetType = 'comment' | 'document_revision';

/** UTF-8 bytes of the target's text a trace keeps (a document revision may be half a megabyte). */
export const MAX_SNAPSHOT_BYTES = 64 * 1024;

/**
 * What can be voted on, read the same way for both kinds: the text, who wrote it (an agent,
 * or `author_type` says otherwise), the run that produced it, and for a revision its document.
 * `$1` is the target, `$2` its issue: a target of another issue answers nothing.
 */
const TARGETS: Record<TargetType, string> = {
  comment: `
    select c.body, c.author_type, c.author_agent_id, c.run_id, c.created_at,
           null::uuid as document_id, null::text as document_key, null::int as revision_number, null::text as title
      from issue_comments c where c.id = $1 and c.issue_id = $2 and c.deleted_at is null`,
  document_revision: `
    select r.body, case when r.created_by_agent_id is not null then 'agent' when r.created_by_user_id is not null then 'user' else 'system' end as author_type,
           r.created_by_agent_id as author_agent_id, r.run_id, r.created_at,
           d.id as document_id, d.key as document_key, r.revision_number, r.title
      from issue_document_revisions r join issue_documents d on d.id = r.document_id where r.id = $1 and d.issue_id = $2`,
};

/** The longest prefix of `text` that fits `maxBytes` in UTF-8 without splitting a character, and the whole text's size. */
export function utf8Prefix(text: string, maxBytes: number): { prefix: string; bytes: number; truncated: boolean } {
  let bytes = 0;
  let end = -1;
  let index = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (end < 0 && bytes + size > maxBytes) end = index;
    bytes += size;
    index += char.length;
  }
  return end < 0 ? { prefix: text, bytes, truncated: false } : { prefix: text.slice(0, end), bytes, truncated: true };
}

export interface AgentOutput { authorAgentId: string; runId: string | null; payload: Record<string, unknown> }

/**
 * The target a vote names, which must be agent output of the (locked) issue: 422
 * `feedback_target_not_found` when the issue has no such comment or revision (a deleted
 * comment included), 422 `not_agent_output` when a user or the platform wrote it. The payload
 * is the snapshot the trace keeps.
 */
export async function agentOutput(ctx: WorkContext, issue: Row, targetType: TargetType, targetId: string): Promise<AgentOutput> {
  const { rows } = await ctx.db.query(TARGETS[targetType], [targetId, issue.id]);
  const target = rows[0];
  const kind = targetType === 'comment' ? 'comment' : 'document revision';
  if (!target) throw new PluginError(422, 'feedback_target_not_found', `targetId: no ${kind} with this id belongs to the issue`, { field: 'targetId' });
  if (target.author_type !== 'agent' || !target.author_agent_id) {
    throw new PluginError(422, 'not_agent_output', `Only agent output takes feedback: this ${kind} was written by a ${target.author_type === 'user' ? 'user' : 'the platform'}`, { field: 'targetId' });
  }
  const authorAgentId = String(target.author_agent_id);
  const runId = (target.run_id as string | null) ?? null;
  const body = utf8Prefix(String(target.body), MAX_SNAPSHOT_BYTES);
  return {
    authorAgentId, runId,
    payload: {
      targetType, targetId, issueId: issue.id, issueIdentifier: issue.identifier, issueTitle: issue.title, projectId: issue.project_id ?? null,
      authorAgentId, runId, body: body.prefix, bodyBytes: body.bytes, bodyTruncated: body.truncated,
      documentId: target.document_id ?? null, documentKey: target.document_key ?? null,
      revisionNumber: target.revision_number === null || target.revision_number === undefined ? null : Number(target.revision_number),
      title: target.title ?? null, targetCreatedAt: time(target.created_at),
    },
  };
}
