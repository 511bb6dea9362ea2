import { createHash, type Hash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/database.ts';
import type { EventBus } from '../events/event-bus.ts';
import { CredentialMask } from './credential-mask.ts';
import { storedLine } from './line-reader.ts';
import { SPOOL_FOLDER, type OutputSpool } from './output-spool.ts';

export type LogStream = 'stdout' | 'stderr' | 'system' | 'sse';

export interface ExecutionRef { executionId: string; runId: string; companyId: string; agentId: string; plugin: string }
/** A workspace process (workspace-processes.ts): no run and no agent; its structured lines are not output events (nothing follows them). */
export interface WorkspaceExecutionRef { executionId: string; runId: null; companyId: string; agentId: null; plugin: string }
export type AnyExecutionRef = ExecutionRef | WorkspaceExecutionRef;

/**
 * The bounds on what one execution's output costs the kernel (docs/api/executions.md, "Output"):
 * - a stored log line keeps its first MAX_LINE_BYTES (the record says how many bytes were cut);
 * - a line is read (held in memory) up to MAX_HELD_LINE_BYTES, so that a structured line (an
 *   agent's result) up to that size is still an output event; of a longer line only the count of
 *   its bytes is kept;
 * - a stored log keeps its first MAX_LOG_BYTES (a note says where it stopped);
 * - at most MAX_PENDING_BYTES wait in memory to be written: past it the process's pipes are
 *   paused (the process waits on its writes) until the batch is stored, so nothing read is lost.
 * A process's complete output is also copied to disk (output-spool.ts), kept when anything was cut.
 */
export const MAX_LINE_BYTES = 64 * 1024;
export const MAX_HELD_LINE_BYTES = 1024 * 1024;
export const MAX_LOG_BYTES = 32 * 1024 * 1024;
export const MAX_PENDING_BYTES = 4 * 1024 * 1024;
const FLUSH_EVERY_MS = 100;
const FLUSH_AT_BYTES = 256 * 1024;

interface Pending { seq: number; record: string; held: number; output: { seq: number; stream: 'stdout' | 'sse'; data: Record<string, unknown> } | null }

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
  /** What was cut from the stored log: lines shortened (and their bytes), lines not kept past MAX_LOG_BYTES. */
  readonly cuts = { lines: 0, bytes: 0, droppedLines: 0 };
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  /** Told of each batch once it is stored (the live log of the execution's stream channel). */
  private readonly onBatch: ((offset: number, content: Buffer) => void) | null;
  /** The live credentials of the execution, masked in every line and output (credential-mask.ts). */
  readonly mask: CredentialMask;
  /** The copy of a process's complete output on disk, if it has one. */
  private readonly spool: OutputSpool | null;
  /** Bytes waiting in memory (records and the outputs of their events). */
  private held = 0;

  constructor(db: Database, events: EventBus, ref: AnyExecutionRef, log: Logger,
    options: { onBatch?: ((offset: number, content: Buffer) => void) | null; mask?: CredentialMask; spool?: OutputSpool | null } = {}) {
    this.db = db;
    this.events = events;
    this.ref = ref;
    this.log = log;
    this.onBatch = options.onBatch ?? null;
    this.mask = options.mask ?? new CredentialMask();
    this.spool = options.spool ?? null;
  }

  /**
   * A line of the process (or a note of the executor); `omittedBytes`: how much of it the
   * reader did not hold (line-reader.ts). A whole stdout line that is a JSON object with a
   * string `type` is also an output event.
   */
  line(stream: LogStream, text: string, omittedBytes = 0): void {
    // Parsed, then masked as a value (every string and key, however the JSON spelt it): masking
    // the text first could break the JSON of a line whose credential is also an ordinary word.
    const whole = stream === 'stdout' && omittedBytes === 0 ? structured(text) : null;
    this.add(stream, text, omittedBytes, whole && this.mask.value(whole));
  }

  /** Raw output on its way to the copy on disk. */
  raw(stream: 'stdout' | 'stderr', text: string): void {
    this.spool?.write(stream, text);
  }

  /** A promise while too much waits to be written (the reader pauses its pipe until it settles). */
  ready(): Promise<void> | null {
    if (this.held >= MAX_PENDING_BYTES) return this.flush();
    return this.spool?.ready() ?? null;
  }

  /** A Server-Sent Event: logged as its data, and always an output event. */
  sse(event: string, data: string): void {
    let parsed: unknown;
    try { parsed = this.mask.value(JSON.parse(data) as unknown); } catch { parsed = this.mask.text(data); /* plain text data stays text */ }
    this.add('sse', data, 0, { event, data: parsed });
  }

  private add(stream: LogStream, text: string, omittedBytes: number, output: Record<string, unknown> | null, always = false): void {
    const seq = ++this.seq;
    const stored = storedLine(text, omittedBytes, MAX_LINE_BYTES, this.mask);
    if (stored.omittedBytes > 0) { this.cuts.lines += 1; this.cuts.bytes += stored.omittedBytes; }
    let record = `${JSON.stringify({ seq, at: new Date().toISOString(), stream, line: stored.line })}\n`;
    if (!always && this.bytes + this.pendingBytes + Buffer.byteLength(record) > MAX_LOG_BYTES) {
      // Past the limit only structured output still goes on (as events); the log notes the cut once.
      this.cuts.droppedLines += 1;
      if (this.dropped && !output) return;
      record = this.dropped ? '' : `${JSON.stringify({ seq, at: new Date().toISOString(), stream: 'system', line: `log limit of ${MAX_LOG_BYTES} bytes reached; later lines are not kept here` })}\n`;
      this.dropped = true;
    }
    const kept = output && (stream === 'stdout' || stream === 'sse') ? { seq, stream, data: output } : null;
    const held = Buffer.byteLength(record) + (kept ? Buffer.byteLength(text) : 0);
    this.pending.push({ seq, record, held, output: kept });
    this.pendingBytes += Buffer.byteLength(record);
    this.held += held;
    if (this.pendingBytes >= FLUSH_AT_BYTES || this.held >= MAX_PENDING_BYTES) void this.flush();
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
    this.held -= batch.reduce((sum, item) => sum + item.held, 0);
    if (content.length > 0) this.onBatch?.(this.bytes, content);
    this.bytes += content.length;
    this.hash.update(content);
  }

  /**
   * Says what was cut (in the log and the kernel's log), keeps or removes the copy on disk,
   * flushes everything and answers the log's size and digest (for the finished row).
   */
  async close(): Promise<{ bytes: number; sha256: string }> {
    const { lines, bytes, droppedLines } = this.cuts;
    const cut = lines > 0 || droppedLines > 0;
    const kept = this.spool ? await this.spool.close(cut) : false;
    if (cut) {
      const where = kept ? `; the complete output is kept on ${hostname()} in ${SPOOL_FOLDER}/${this.ref.executionId}/ under the data directory` : '';
      const what = [lines > 0 ? `${lines} line(s) cut to ${MAX_LINE_BYTES} bytes (${bytes} bytes omitted)` : null,
        droppedLines > 0 ? `${droppedLines} line(s) past the log limit of ${MAX_LOG_BYTES} bytes not kept here` : null].filter(Boolean).join(', ');
      this.add('system', `output cut: ${what}${where}`, 0, null, true);
      this.log.warn({ executionId: this.ref.executionId, cutLines: lines, omittedBytes: bytes, droppedLines, spool: kept ? this.spool!.dir : null, spoolError: this.spool?.error?.message },
        'execution output cut to its limits');
    }
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

/** What a process's line reader holds: a structured line up to MAX_HELD_LINE_BYTES, and room to mask a credential that straddles the cut. */
export function heldLineChars(mask: CredentialMask): number {
  return MAX_HELD_LINE_BYTES + Math.min(mask.longest, MAX_LINE_BYTES);
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
