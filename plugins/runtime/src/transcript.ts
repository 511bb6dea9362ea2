import { PluginError, type RouteRequest } from '@keel/sdk/plugin';
import { runChannel, type Row, type RuntimeContext } from './context.ts';

/** The kinds of transcript entries (docs/api/runtime.md, "Transcripts"). */
export const TRANSCRIPT_KINDS = new Set(['init', 'assistant', 'thinking', 'tool_call', 'tool_result', 'error', 'result', 'system', 'log']);
/** What one run keeps: past it, one last `system` entry says the transcript was cut (the raw log keeps everything). */
export const MAX_TRANSCRIPT_ENTRIES = 5_000;
/** One entry's JSON at most, in characters; a longer one keeps its kind and the start of its text. */
export const MAX_ENTRY_CHARS = 16_384;
const MAX_RELAYED = 6_000;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** An entry as kept: a known kind, bounded in size (long text fields cut with a note of how much). */
export function boundedEntry(entry: unknown): Record<string, unknown> {
  if (!isObject(entry) || typeof entry.kind !== 'string' || !TRANSCRIPT_KINDS.has(entry.kind)) {
    return { kind: 'log', line: JSON.stringify(entry ?? null).slice(0, 4_000) };
  }
  if (JSON.stringify(entry).length <= MAX_ENTRY_CHARS) return entry;
  const cut: Record<string, unknown> = { kind: entry.kind, truncated: true };
  for (const [name, value] of Object.entries(entry)) {
    if (name === 'kind') continue;
    cut[name] = typeof value === 'string' ? (value.length > 4_000 ? `${value.slice(0, 4_000)}… [${value.length - 4_000} characters cut]` : value)
      : JSON.stringify(value ?? null).length > 4_000 ? `${JSON.stringify(value).slice(0, 4_000)}… [cut]` : value;
  }
  return cut;
}

/**
 * Keeps the entries of one `service.transcript` output (the run row is locked by the caller) and
 * relays each on the run's stream as `{event: 'transcript', seq, entry}`. A redelivered output
 * adds nothing; past MAX_TRANSCRIPT_ENTRIES one `system` entry says so and the rest stays in the log.
 */
export async function keepTranscript(ctx: RuntimeContext, run: Row, sourceSeq: number, entries: unknown[]): Promise<void> {
  const { rows } = await ctx.db.query('select coalesce(max(seq), 0)::int as last from run_transcript where run_id = $1', [run.id]);
  let seq = Number(rows[0]!.last);
  if (seq > MAX_TRANSCRIPT_ENTRIES) return;
  for (const [idx, raw] of entries.entries()) {
    const entry = seq >= MAX_TRANSCRIPT_ENTRIES
      ? { kind: 'system', message: `transcript cut at ${MAX_TRANSCRIPT_ENTRIES} entries; the run's log keeps the rest` }
      : boundedEntry(raw);
    const { rows: inserted } = await ctx.db.query(
      `insert into run_transcript (run_id, company_id, seq, source_seq, idx, entry) values ($1, $2, $3, $4, $5, $6::jsonb)
       on conflict (run_id, source_seq, idx) do nothing returning seq, created_at`,
      [run.id, run.company_id, seq + 1, sourceSeq, idx, JSON.stringify(entry)]);
    if (!inserted[0]) continue;
    seq += 1;
    const relayed = { event: 'transcript', seq, entry };
    await ctx.streams.publish(runChannel(String(run.id)), JSON.stringify(relayed).length <= MAX_RELAYED ? relayed : { event: 'transcript', seq, truncated: true, kind: entry.kind });
    if (seq > MAX_TRANSCRIPT_ENTRIES) return;
  }
}

/** GET /api/heartbeat-runs/{runId}/transcript?afterSeq=&limit=: the entries in order, from after `afterSeq`. */
export async function runTranscriptRoute(req: RouteRequest, ctx: RuntimeContext) {
  const query = req.query as { afterSeq?: number; limit?: number };
  const { rows: runs } = await ctx.db.query('select id, status from runs where id = $1 and company_id = $2', [req.params.runId, ctx.invocation.companyId]);
  const run = runs[0];
  if (!run) throw new PluginError(404, 'not_found', 'Heartbeat run not found');
  const afterSeq = query.afterSeq ?? 0;
  const limit = query.limit ?? 200;
  const { rows } = await ctx.db.query(
    'select seq, created_at, entry from run_transcript where run_id = $1 and seq > $2 order by seq limit $3', [run.id, afterSeq, limit + 1]);
  const page = rows.slice(0, limit);
  const ended = run.status !== 'queued' && run.status !== 'running';
  return {
    runId: run.id,
    entries: page.map((row) => ({ seq: Number(row.seq), at: new Date(String(row.created_at)).toISOString(), ...(row.entry as Record<string, unknown>) })),
    nextSeq: page.length > 0 ? Number(page[page.length - 1]!.seq) : afterSeq,
    eof: rows.length <= limit && ended,
  };
}
