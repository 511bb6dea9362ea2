import type { PluginError } from '@keel/sdk/plugin';
import { ROOT, type WikiContext } from './context.ts';
import { lockFile, readIfExists } from './files.ts';
import { INGEST_CAPS } from './ingest-caps.ts';
import { ingestionEnabled } from './ingestion.ts';
import { issueMarkdown, type IssueSource } from './issue-markdown.ts';
import { recordOperation } from './operations.ts';
import { hashOf } from './page-index.ts';
import { DEFAULT_SPACE, rawDir } from './paths.ts';
import { ensureDefaultSpace } from './scope.ts';

/** Identifiers that are safe as a file name (the work plugin's are `PREFIX-123`). */
const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/**
 * work.issue.created / updated / comment_added / document_updated: when ingestion is on for the
 * event's company, the issue's source file in the default space (raw/issues/<identifier>.md) is
 * written again from the issue as it is now, and gets a new cursor position when its text
 * changed. Each event id is handled once, and the same text is never written twice, so a
 * redelivered event changes nothing. The event's company is the only one touched (the host runs
 * the call in it; the issue is read through the work plugin in that company). A company without
 * a mounted folder is skipped with a log line: retrying would not mount it.
 */
export async function onIssueEvent(payload: Record<string, unknown>, ctx: WikiContext): Promise<void> {
  const companyId = ctx.invocation.companyId;
  const issueId = typeof payload.issueId === 'string' ? payload.issueId : null;
  if (!companyId || !issueId) return;
  if (!(await ingestionEnabled(ctx, companyId))) return;
  const event = ctx.invocation.event;
  if (event) {
    const { rows } = await ctx.db.query('insert into ingested_events (event_id, company_id) values ($1, $2) on conflict do nothing returning event_id', [event.id, companyId]);
    if (!rows[0]) return;
  }
  const { issue } = await ctx.services.call('work', 'issue-source', { issueId, maxCharacters: INGEST_CAPS.perIssueSource }) as { issue: IssueSource | null };
  // Hidden issues are the platform's own tasks (the maintainer's among them), not company knowledge.
  if (!issue || issue.hidden) return;
  if (!IDENTIFIER.test(issue.identifier)) {
    ctx.log.warn('wiki ingestion skipped an issue whose identifier is not a file name', { issueId, identifier: issue.identifier.slice(0, 80) });
    return;
  }
  const path = `issues/${issue.identifier}.md`;
  const file = `${rawDir(DEFAULT_SPACE)}/${path}`;
  const { content, truncated } = issueMarkdown(issue);
  await lockFile(ctx, companyId, file);
  let before: string | null;
  try {
    before = await readIfExists(ctx, file);
    if (before !== content) await ctx.folders.write(ROOT, file, content);
  } catch (error) {
    if ((error as PluginError).code !== 'folder_not_configured') throw error;
    ctx.log.warn('wiki ingestion skipped an event: the company has no wiki-root folder mounted', { companyId, event: event?.name ?? null, issueId });
    return;
  }
  const hash = await hashOf(ctx, content);
  const { rows: known } = await ctx.db.query<{ hash: string }>('select hash from ingested_sources where company_id = $1 and issue_id = $2', [companyId, issue.id]);
  if (before === content && known[0]?.hash === hash) return;
  const { rows } = await ctx.db.query<{ position: string }>(
    `insert into ingested_sources (company_id, issue_id, identifier, path, hash, characters, truncated, position)
     values ($1, $2, $3, $4, $5, $6, $7, nextval('ingest_positions'))
     on conflict (company_id, issue_id) do update set identifier = excluded.identifier, path = excluded.path, hash = excluded.hash,
       characters = excluded.characters, truncated = excluded.truncated, position = excluded.position, updated_at = now()
     returning position::text as position`,
    [companyId, issue.id, issue.identifier, path, hash, content.length, truncated]);
  await ensureDefaultSpace(ctx, companyId);
  await recordOperation(ctx, companyId, DEFAULT_SPACE, {
    kind: 'ingest_source', path, summary: `${issue.identifier}: ${issue.title}`.slice(0, 200),
    details: { issueId: issue.id, identifier: issue.identifier, event: event?.name ?? null, hash, characters: content.length, truncated, position: rows[0]!.position },
  });
}
