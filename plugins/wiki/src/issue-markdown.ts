import { INGEST_CAPS, TRUNCATION_MARKER } from './ingest-caps.ts';

/** An issue as the work plugin's `issue-source` service answers it. */
export interface IssueSource {
  id: string; identifier: string; title: string; status: string; hidden: boolean; description: string; truncated: boolean;
  documents: Array<{ key: string; title: string | null; body: string; revisionNumber: number; updatedAt: string }>;
  comments: Array<{ id: string; authorType: string; authorAgentId: string | null; authorUserId: string | null; body: string; createdAt: string }>;
}

/**
 * The markdown of an issue's source file: title, status, description, documents, comments
 * oldest first. Only the issue's own data goes in (no time of ingestion), so the same issue
 * renders the same text and a repeated event changes nothing. Longer than the per-issue cap:
 * cut, and the marker says so (the marker counts within the cap).
 */
export function issueMarkdown(issue: IssueSource): { content: string; truncated: boolean } {
  const parts = [`# ${issue.identifier}: ${oneLine(issue.title)}`, '', `- Issue: ${issue.identifier}`, `- Status: ${issue.status}`, ''];
  if (issue.description.trim()) parts.push('## Description', '', issue.description.trim(), '');
  for (const doc of issue.documents) {
    parts.push(`## Document: ${doc.key}${doc.title ? ` (${oneLine(doc.title)})` : ''}, revision ${doc.revisionNumber}`, '', doc.body.trim(), '');
  }
  if (issue.comments.length) {
    parts.push('## Comments', '');
    for (const comment of issue.comments) {
      const author = comment.authorType === 'agent' ? `agent ${comment.authorAgentId}` : comment.authorType === 'user' ? `user ${comment.authorUserId}` : 'system';
      parts.push(`### ${comment.createdAt}, ${author}`, '', comment.body.trim(), '');
    }
  }
  const full = parts.join('\n');
  const cap = INGEST_CAPS.perIssueSource;
  if (full.length <= cap && !issue.truncated) return { content: full, truncated: false };
  let room = cap - TRUNCATION_MARKER.length;
  // Never split a surrogate pair (the file must stay valid UTF-8).
  if (full.length > room && /[\uD800-\uDBFF]/.test(full[room - 1]!)) room -= 1;
  return { content: (full.length > room ? full.slice(0, room) : full.replace(/\n+$/, '')) + TRUNCATION_MARKER, truncated: true };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
