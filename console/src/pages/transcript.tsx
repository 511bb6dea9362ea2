import type { ReactNode } from 'react';
import { api } from '../api.ts';

/** One transcript entry as the runtime keeps it (docs/api/runtime.md, "Transcripts"). */
export interface TranscriptEntry {
  seq: number; at?: string; kind: string; truncated?: boolean;
  sessionId?: string; model?: string; version?: string; tools?: string[];
  text?: string | null; id?: string; name?: string; input?: unknown; output?: unknown; isError?: boolean;
  message?: string; turns?: number; durationMs?: number; line?: string;
}

/** At most this many entries are kept on the page (the run's own limit is 5,000). */
const MAX_ENTRIES = 5_000;

/**
 * Reads a run's transcript and keeps it in order: pages of GET .../transcript from the last seq
 * shown, and the stream's `transcript` events applied when they follow on (a gap, or an entry the
 * stream left out for its size, reads the route again). Reads run one after another.
 */
export function transcriptReader(runId: string, set: (update: (before: TranscriptEntry[]) => TranscriptEntry[]) => void, onError: (error: unknown) => void) {
  let last = 0;
  let queue: Promise<void> = Promise.resolve();
  const add = (entries: TranscriptEntry[]) => {
    const fresh = entries.filter((entry) => entry.seq > last);
    if (!fresh.length) return;
    last = fresh[fresh.length - 1]!.seq;
    set((before) => [...before, ...fresh].slice(-MAX_ENTRIES));
  };
  const readFrom = async () => {
    for (let pages = 0; pages < 50; pages++) {
      const page = await api.get<{ entries: TranscriptEntry[]; nextSeq: number; eof: boolean }>(`/api/heartbeat-runs/${runId}/transcript`, { afterSeq: last, limit: 200 });
      add(page.entries);
      if (page.eof || page.entries.length === 0) return;
    }
  };
  const enqueue = (work: () => Promise<void> | void) => { queue = queue.then(work).catch(onError); return queue; };
  return {
    read: () => enqueue(readFrom),
    /** A stream event `{event: 'transcript', seq, entry}` (or `{..., truncated: true}` without the entry). */
    event: (data: { seq: number; entry?: Omit<TranscriptEntry, 'seq'>; truncated?: boolean }) => enqueue(async () => {
      if (data.seq <= last) return;
      if (data.seq === last + 1 && data.entry && !data.truncated) add([{ ...data.entry, seq: data.seq } as TranscriptEntry]);
      else await readFrom();
    }),
  };
}

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/** A tool call with its result (matched by id, else the next result without one), collapsed. */
function ToolCall({ call, result }: { call: TranscriptEntry; result: TranscriptEntry | undefined }) {
  const state = !result ? 'running' : result.isError ? 'failed' : 'done';
  return (
    <details className={`t-tool t-tool-${state}`} data-kind="tool_call">
      <summary>Tool call <strong>{call.name ?? 'tool'}</strong> <span className="muted">{state}</span></summary>
      <h4>Input</h4>
      <pre className="code" tabIndex={0}>{text(call.input ?? null)}</pre>
      {result ? <><h4>{result.isError ? 'Error result' : 'Result'}</h4><pre className="code" tabIndex={0}>{text(result.output ?? '')}</pre></> : <p className="muted">No result yet.</p>}
    </details>
  );
}

/**
 * The transcript as a conversation: the assistant's messages, tool calls collapsed with their
 * input and result, thinking collapsed, errors highlighted, and the run's result at the end.
 */
export function Conversation({ entries }: { entries: TranscriptEntry[] }) {
  const results = new Map<string, TranscriptEntry>();
  const pairedWithoutId = new Map<number, TranscriptEntry>();
  const used = new Set<number>();
  entries.forEach((entry, index) => {
    if (entry.kind === 'tool_result' && entry.id) results.set(entry.id, entry);
    if (entry.kind !== 'tool_call' || entry.id) return;
    const next = entries.slice(index + 1).find((candidate) => candidate.kind === 'tool_result' && !candidate.id && !used.has(candidate.seq));
    if (next) { used.add(next.seq); pairedWithoutId.set(entry.seq, next); }
  });
  const callIds = new Set(entries.filter((entry) => entry.kind === 'tool_call' && entry.id).map((entry) => entry.id));
  const items: ReactNode[] = [];
  for (const entry of entries) {
    const key = entry.seq;
    switch (entry.kind) {
      case 'init':
        items.push(<li key={key} className="t-system">Session started{entry.model ? ` · model ${entry.model}` : ''}{entry.version ? ` · version ${entry.version}` : ''}{entry.sessionId ? ` · session ${entry.sessionId}` : ''}{entry.tools?.length ? ` · ${entry.tools.length} tools` : ''}</li>);
        break;
      case 'assistant':
        items.push(<li key={key} className="t-assistant"><article aria-label="Assistant message" className="prewrap">{entry.text ?? ''}</article></li>);
        break;
      case 'thinking':
        items.push(<li key={key}><details className="t-thinking"><summary>Thinking</summary><p className="prewrap">{entry.text ?? ''}</p></details></li>);
        break;
      case 'tool_call':
        items.push(<li key={key}><ToolCall call={entry} result={entry.id ? results.get(entry.id) : pairedWithoutId.get(entry.seq)} /></li>);
        break;
      case 'tool_result':
        // Shown with its call; a result whose call is not in the transcript stands alone.
        if ((entry.id && callIds.has(entry.id)) || (!entry.id && used.has(entry.seq))) break;
        items.push(<li key={key}><details className="t-tool"><summary>Tool result{entry.isError ? ' (error)' : ''}</summary><pre className="code" tabIndex={0}>{text(entry.output ?? '')}</pre></details></li>);
        break;
      case 'error':
        items.push(<li key={key} className="t-error" data-kind="error"><strong>Error:</strong> <span className="prewrap">{entry.message ?? ''}</span></li>);
        break;
      case 'result':
        items.push(
          <li key={key} className={entry.isError ? 't-result t-error' : 't-result'} data-kind="result">
            <strong>{entry.isError ? 'Result (error)' : 'Result'}</strong>
            <span className="muted">{entry.turns !== undefined ? ` · ${entry.turns} turns` : ''}{entry.durationMs !== undefined ? ` · ${(entry.durationMs / 1000).toFixed(1)} s` : ''}</span>
            {entry.text ? <p className="prewrap">{entry.text}</p> : null}
          </li>);
        break;
      case 'system':
        items.push(<li key={key} className="t-system">{entry.message ?? ''}</li>);
        break;
      default:
        items.push(<li key={key} className="t-log"><code>{entry.line ?? JSON.stringify(entry)}</code></li>);
    }
  }
  return <ol className="transcript" aria-label="Transcript" data-testid="transcript">{items}</ol>;
}
