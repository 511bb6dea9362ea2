import { PluginError } from '@keel/sdk/plugin';
import type { WikiContext } from './context.ts';
import { readIfExists } from './files.ts';
import { INGEST_CAPS } from './ingest-caps.ts';
import { recordOperation } from './operations.ts';
import { DEFAULT_SPACE, rawDir } from './paths.ts';
import { ensureDefaultSpace, toolScope } from './scope.ts';

interface ToolInput { companyId: string; wikiId: string }

/** Ingestion always writes into the default space, so its cursor tools work there only. */
async function ingestionScope(ctx: WikiContext, input: ToolInput & { spaceSlug?: string }): Promise<string> {
  if (input.spaceSlug !== undefined && input.spaceSlug !== DEFAULT_SPACE) {
    throw new PluginError(400, 'default_space_only', 'Ingested sources live in the default space; omit spaceSlug or pass "default"');
  }
  return (await toolScope(ctx, input, { writable: false })).companyId;
}

async function cursorPosition(ctx: WikiContext, companyId: string): Promise<string> {
  const { rows } = await ctx.db.query<{ position: string }>('select position::text as position from ingestion_cursors where company_id = $1', [companyId]);
  return rows[0]?.position ?? '0';
}

/**
 * The next cursor window: the sources ingested or changed since the cursor, oldest change first,
 * whole, as many as fit in 60,000 characters, and within what is left of the calling run's
 * 120,000 (every window handed to a run counts, whether or not the cursor moved). An agent must
 * call from a run the kernel verified (its run token); a board user has the window cap only. Reading moves
 * nothing: the maintainer passes `to` to wiki_advance_cursor once it has processed the window.
 * A source changed again after its window was handed out comes again in a later one.
 */
export async function wikiNextCursorWindow(input: unknown, ctx: WikiContext) {
  const companyId = await ingestionScope(ctx, input as ToolInput);
  const from = await cursorPosition(ctx, companyId);
  // The per-run cap holds only for runs the kernel vouches for: a run id an agent merely names
  // (a header) could be a fresh one on every call. An agent reads windows from its run.
  const runId = ctx.invocation.runVerified ? ctx.invocation.runId : null;
  if (!runId && ctx.invocation.actor.type === 'agent') {
    throw new PluginError(403, 'run_required', 'An agent reads cursor windows from a run: call with the run\'s token (SERVICE_API_KEY), which the per-run cap of 120,000 characters counts against');
  }
  let runUsed = 0;
  if (runId) {
    const { rows } = await ctx.db.query<{ characters: number }>('select characters from cursor_run_usage where company_id = $1 and run_id = $2', [companyId, runId]);
    runUsed = rows[0]?.characters ?? 0;
  }
  const budget = Math.min(INGEST_CAPS.perCursorWindow, runId ? INGEST_CAPS.perRoutineRun - runUsed : Infinity);
  // Ordered by the column, not the text alias of the same name (text order puts 10 before 3).
  const { rows: candidates } = await ctx.db.query<{ issueId: string; identifier: string; path: string; position: string; characters: number; truncated: boolean }>(
    `select issue_id as "issueId", identifier, path, position::text as position, characters, truncated from ingested_sources
      where company_id = $1 and position > $2::bigint order by ingested_sources.position limit 500`, [companyId, from]);
  const sources: Array<{ path: string; issueId: string; identifier: string; position: string; characters: number; truncated: boolean; content: string }> = [];
  let characters = 0;
  let to = from;
  for (const candidate of candidates) {
    const content = await readIfExists(ctx, `${rawDir(DEFAULT_SPACE)}/${candidate.path}`);
    // A source removed from disk since has nothing to process: the window passes over it.
    if (content === null) { to = candidate.position; continue; }
    if (characters + content.length > budget) break;
    sources.push({ ...candidate, characters: content.length, content });
    characters += content.length;
    to = candidate.position;
  }
  if (runId && characters > 0) {
    await ctx.db.query(
      `insert into cursor_run_usage (company_id, run_id, characters) values ($1, $2, $3)
       on conflict (company_id, run_id) do update set characters = cursor_run_usage.characters + excluded.characters, updated_at = now()`,
      [companyId, runId, characters]);
  }
  const { rows: left } = await ctx.db.query<{ count: number }>(
    'select count(*)::int as count from ingested_sources where company_id = $1 and position > $2::bigint', [companyId, to]);
  return {
    spaceSlug: DEFAULT_SPACE, from, to, sources, characters, remainingSources: left[0]!.count,
    caps: INGEST_CAPS, run: runId ? { runId, characters: runUsed + characters, exhausted: runUsed + characters >= INGEST_CAPS.perRoutineRun } : null,
  };
}

/** Moves the cursor to `to` (a window's end): what was processed is not handed out again. Never backwards. */
export async function wikiAdvanceCursor(input: unknown, ctx: WikiContext) {
  const { to, ...scope } = input as ToolInput & { to: string };
  const companyId = await ingestionScope(ctx, scope);
  const { rows: last } = await ctx.db.query<{ max: string }>('select coalesce(max(position), 0)::text as max from ingested_sources where company_id = $1', [companyId]);
  if (BigInt(to) > BigInt(last[0]!.max)) throw new PluginError(409, 'cursor_ahead', `Position ${to} is past the last ingested source (${last[0]!.max})`, { lastPosition: last[0]!.max });
  const from = await cursorPosition(ctx, companyId);
  if (BigInt(to) <= BigInt(from)) return { spaceSlug: DEFAULT_SPACE, position: from, moved: false };
  await ctx.db.query(
    `insert into ingestion_cursors (company_id, position) values ($1, $2::bigint)
     on conflict (company_id) do update set position = greatest(ingestion_cursors.position, excluded.position), updated_at = now()`, [companyId, to]);
  await ensureDefaultSpace(ctx, companyId);
  await recordOperation(ctx, companyId, DEFAULT_SPACE, { kind: 'advance_cursor', summary: `cursor ${from} -> ${to}`, details: { from, to } });
  return { spaceSlug: DEFAULT_SPACE, position: to, moved: true };
}
