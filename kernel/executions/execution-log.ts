import { createHash, type Hash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.ts';
import type { EventBus } from '../events/event-bus.ts';

export type LogStream = 'stdout' | 'stderr' | 'system' | 'sse';

export interface ExecutionRef { executionId: string; runId: string; companyId: string; agentId: string; plugin: string }
/** A workspace process (workspace-processes.ts): no run and no agent; its structured lines are not output events (nothing follows them). */
export interface WorkspaceExecutionRef { executionId: string; runId: null; companyId: string; agentId: null; plugin: string }
export type AnyExecutionRef = ExecutionRef | WorkspaceExecutionRef;

/** A line longer than this is cut (the record says so); a log longer than MAX_LOG_BYTES keeps its first part. */
export const MAX_LINE_CHARS = 64 * 1024;
export const MAX_LOG_BYTES = 32 * 1024 * 1024;
const FLUSH_EVERY_MS = 100;
const FLUSH_AT_BYTES = 256 * 1024;

interface Pending { seq: number; record: string; output: { seq: number; stream: 'stdout' | 'sse'; data: Record<string, unknown> } | null }

/**
 * The log of one execution, written as NDJSON records (`{"seq","at","stream","line"}`) into
 * execution_log_chunks, each chunk at its byte offset, so that any Keel process reads it by
 * offset while the execution runs; nothing of it stays in a plugin's isolate. Lines are
 * batched (every 100 ms or 256 KiB) and each batch commits together with the
 * `execution.output` events of its structured lines (up to 50 per event), in line order, to
 * the starting plugin.
 */
export class ExecutionLog {
  private readonly db: Database;
  private readonly events: EventBus;
  private readonly ref: AnyExecutionRef;
  private readonly log: Logger;
  private readonly hash: Hash = createHash('sha256');
  private pending: Pending[] = [];
  private pendingBytes = 0;
  private seq = 0;
  private bytes = 0;
  private dropped = false;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  /** Told of each batch once it is stored (the live log of the execution's stream channel). */
  private readonly onBatch: ((offset: number, content: Buffer) => void) | null;

  constructor(db: Database, events: EventBus, ref: AnyExecutionRef, log: Logger, onBatch: ((offset: number, content: Buffer) => void) | null = null) {
    this.db = db;
    this.events = events;
    this.ref = ref;
    this.log = log;
    this.onBatch = onBatch;
  }

  /** A line of the process (or a note of the executor); a stdout line that is a JSON object with a string `type` is also an output event. */
  line(stream: LogStream, text: string): void {
    this.add(stream, text, stream === 'stdout' ? structured(text) : null);
  }

  /** A Server-Sent Event: logged as its data, and always an output event. */
  sse(event: string, data: string): void {
    let parsed: unknown = data;
    try { parsed = JSON.parse(data); } catch { /* plain text data stays text */ }
    this.add('sse', data, { event, data: parsed });
  }

  private add(stream: LogStream, text: string, output: Record<string, unknown> | null): void {
    const seq = ++this.seq;
    const line = text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}…[cut at ${MAX_LINE_CHARS} characters]` : text;
    let record = `${JSON.stringify({ seq, at: new Date().toISOString(), stream, line })}\n`;
    if (this.bytes + this.pendingBytes + Buffer.byteLength(record) > MAX_LOG_BYTES) {
      // Past the limit only structured output still goes on (as events); the log notes the cut once.
      if (this.dropped && !output) return;
      record = this.dropped ? '' : `${JSON.stringify({ seq, at: new Date().toISOString(), stream: 'system', line: `log limit of ${MAX_LOG_BYTES} bytes reached; later lines are not kept` })}\n`;
      this.dropped = true;
    }
    this.pending.push({ seq, record, output: output && (stream === 'stdout' || stream === 'sse') ? { seq, stream, data: output } : null });
    this.pendingBytes += Buffer.byteLength(record);
    if (this.pendingBytes >= FLUSH_AT_BYTES) void this.flush();
    else this.timer ??= setTimeout(() => { this.timer = null; void this.flush(); }, FLUSH_EVERY_MS);
  }

  /** Writes what is pending (one at a time, in order); a failed write is kept and tried again with the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write()).catch((error: unknown) => {
      this.log.error({ err: error, executionId: this.ref.executionId }, 'could not write an execution log batch; will retry');
    });
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.timer) { clearTimeout(this.timer); this.timer = null; }
    if (this.pending.length === 0) return;
    // A copy: lines added while this batch is written go to the next one.
    const batch = this.pending.slice();
    const content = Buffer.from(batch.map((item) => item.record).join(''));
    await this.db.transaction(async (tx) => {
      if (content.length > 0) {
        await tx.exec('insert into execution_log_chunks (execution_id, byte_offset, content) values (?, ?, ?)', [this.ref.executionId, this.bytes, content]);
      }
      await tx.exec('update executions set log_bytes = ?, output_seq = ? where id = ?', [this.bytes + content.length, batch.at(-1)!.seq, this.ref.executionId]);
      // The batch's structured lines go out together (one event per group, in line order): the
      // plugin handles a burst of usage reports in one call rather than one call per line.
      const { ref } = this;
      if (ref.runId !== null) {
        for (const outputs of outputGroups(batch)) {
          await this.events.appendTo(tx, 'execution.output', {
            executionId: ref.executionId, runId: ref.runId, companyId: ref.companyId, agentId: ref.agentId, outputs,
          }, ref.plugin);
        }
      }
    });
    this.pending = this.pending.slice(batch.length);
    this.pendingBytes -= content.length;
    if (content.length > 0) this.onBatch?.(this.bytes, content);
    this.bytes += content.length;
    this.hash.update(content);
  }

  /** Flushes everything and answers the log's size and digest (for the finished row). */
  async close(): Promise<{ bytes: number; sha256: string }> {
    await this.flush();
    if (this.pending.length > 0) await this.flush();
    return { bytes: this.bytes, sha256: this.hash.copy().digest('hex') };
  }
}

/** At most this many outputs, and about this many bytes of them, per `execution.output` event. */
export const MAX_OUTPUTS_PER_EVENT = 50;
const MAX_EVENT_BYTES = 256 * 1024;

type Output = NonNullable<Pending['output']>;

function outputGroups(batch: Pending[]): Output[][] {
  const groups: Output[][] = [];
  let current: Output[] = [];
  let bytes = 0;
  for (const item of batch) {
    if (!item.output) continue;
    const size = Buffer.byteLength(JSON.stringify(item.output.data));
    if (current.length > 0 && (current.length >= MAX_OUTPUTS_PER_EVENT || bytes + size > MAX_EVENT_BYTES)) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item.output);
    bytes += size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** The JSON object of a stdout line with a string `type` (the agent protocol), else null. */
function structured(text: string): Record<string, unknown> | null {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return null;
  try {
    const value = JSON.parse(trimmed) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value) && typeof (value as { type?: unknown }).type === 'string') return value as Record<string, unknown>;
  } catch { /* a plain line */ }
  return null;
}

/** Reads a log by byte offset from its chunks (any process, any time). */
export async function readExecutionLog(db: Queryable, executionId: string, offset: number, limitBytes: number, totalBytes: number, finished: boolean): Promise<{ content: string; offset: number; nextOffset: number; eof: boolean }> {
  const start = Math.min(offset, totalBytes);
  const rows = await db.query<{ byte_offset: string; content: Buffer }>(
    `select byte_offset, content from execution_log_chunks
      where execution_id = ? and byte_offset < ? and byte_offset + octet_length(content) > ?
      order by byte_offset`, [executionId, start + limitBytes, start]);
  const parts: Buffer[] = [];
  for (const row of rows) {
    const at = Number(row.byte_offset);
    parts.push(row.content.subarray(Math.max(0, start - at), Math.min(row.content.length, start + limitBytes - at)));
  }
  let page = Buffer.concat(parts);
  // Whole UTF-8 characters only: a page never ends inside one (the next page starts with it).
  let end = page.length;
  if (end === limitBytes) {
    let back = end - 1;
    while (back > 0 && (page[back]! & 0xc0) === 0x80) back--;
    if (back >= 0 && (page[back]! & 0x80) !== 0) {
      const lead = page[back]!;
      const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
      if (back + size > end) end = back;
    }
    page = page.subarray(0, end);
  }
  const nextOffset = start + page.length;
  return { content: page.toString('utf8'), offset: start, nextOffset, eof: finished && nextOffset >= totalBytes };
}
