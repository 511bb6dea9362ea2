import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { MaskingStream, type CredentialMask } from './credential-mask.ts';

/**
 * The folder under the data directory where a process execution's complete output is kept
 * when its stored log had to cut something: `<dataDir>/execution-output/<executionId>/`,
 * one file per stream (`stdout.log`, `stderr.log`), credentials masked as in the log.
 */
export const SPOOL_FOLDER = 'execution-output';
/** Past this many bytes of one stream even the copy on disk stops (the file's last line says so): a bound on a runaway process's disk use. */
export const MAX_SPOOL_BYTES = 4 * 1024 * 1024 * 1024;
/**
 * Output held in memory before the copy goes to disk. Most processes write less and end with
 * nothing cut: their copy never touches the disk (a folder, two files and their removal were a
 * measurable share of the kernel's work per run of a fleet of short processes).
 */
export const SPOOL_MEMORY_BYTES = 64 * 1024;

type SpooledStream = 'stdout' | 'stderr';

/**
 * The copy on disk of a process execution's output, written as it is read (the pipe waits
 * while a file is behind: `ready`). Kept only when the stored log cut a line or reached its
 * limit; otherwise the log holds everything and the copy is removed at the end. A kept copy
 * stays until an operator removes it; it is on the node that ran the process. The first
 * SPOOL_MEMORY_BYTES wait in memory: a copy kept at the end is written then, and one that is
 * not kept was never written.
 */
export class OutputSpool {
  readonly dir: string;
  private readonly mask: CredentialMask;
  private readonly files = new Map<SpooledStream, { out: WriteStream; bytes: number; full: boolean }>();
  /** Maskers per stream (a credential may span two chunks), from the first byte whether in memory or on disk. */
  private readonly maskers = new Map<SpooledStream, MaskingStream>();
  /** Masked output not yet on disk, per stream, in order; null once the copy went to disk. */
  private held: Map<SpooledStream, string[]> | null = new Map();
  private heldBytes = 0;
  private failed: Error | null = null;

  constructor(dataDir: string, executionId: string, mask: CredentialMask) {
    this.dir = join(dataDir, SPOOL_FOLDER, executionId);
    this.mask = mask;
  }

  write(stream: SpooledStream, text: string): void {
    if (this.failed || text.length === 0) return;
    const masked = this.masker(stream).push(text);
    if (this.held) {
      const chunks = this.held.get(stream) ?? [];
      chunks.push(masked);
      this.held.set(stream, chunks);
      this.heldBytes += masked.length; // characters: close enough to bytes for a bound
      if (this.heldBytes >= SPOOL_MEMORY_BYTES) this.toDisk();
      return;
    }
    this.append(stream, masked);
  }

  /** Masked text onto a stream's file (opened on first use), up to the bound. */
  private append(stream: SpooledStream, masked: string): void {
    const file = this.file(stream);
    if (!file || file.full) return;
    const size = Buffer.byteLength(masked);
    if (file.bytes + size > MAX_SPOOL_BYTES) {
      file.full = true;
      file.out.write(`\n[the copy stops here: ${MAX_SPOOL_BYTES} bytes reached]\n`);
      return;
    }
    file.bytes += size;
    file.out.write(masked);
  }

  /** A promise while a file has more queued than its stream buffers (the reader pauses until it drains). */
  ready(): Promise<void> | null {
    for (const file of this.files.values()) {
      if (!file.out.writableNeedDrain || file.out.destroyed) continue;
      const { out } = file;
      return new Promise((resolve) => {
        const done = () => { out.off('drain', done); out.off('close', done); resolve(); };
        out.on('drain', done);
        out.on('close', done);
      });
    }
    return null;
  }

  /** What waited in memory goes to disk; from here on output is written as it comes. */
  private toDisk(): void {
    const held = this.held;
    if (!held) return;
    this.held = null;
    this.heldBytes = 0;
    for (const [stream, chunks] of held) this.append(stream, chunks.join(''));
  }

  /** Ends the files; removes them unless `keep`. Answers whether a complete copy is on disk. */
  async close(keep: boolean): Promise<boolean> {
    if (this.held) {
      // Nothing reached the disk: a copy not kept costs nothing more.
      if (!keep) return false;
      this.toDisk();
    }
    for (const [stream, masker] of this.maskers) {
      const tail = masker.end();
      if (tail) this.append(stream, tail);
    }
    const closing = [...this.files.values()].map((file) => new Promise<void>((resolve) => {
      if (file.out.destroyed) { resolve(); return; }
      file.out.end(() => resolve());
      file.out.once('error', () => resolve());
    }));
    await Promise.all(closing);
    if (!keep || this.failed || this.files.size === 0) {
      await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
      return false;
    }
    return true;
  }

  get error(): Error | null {
    return this.failed;
  }

  private file(stream: SpooledStream) {
    let file = this.files.get(stream);
    if (file) return file;
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      this.failed = error as Error;
      return null;
    }
    const out = createWriteStream(join(this.dir, `${stream}.log`), { mode: 0o600 });
    out.on('error', (error) => { this.failed = error; });
    file = { out, bytes: 0, full: false };
    this.files.set(stream, file);
    return file;
  }

  private masker(stream: SpooledStream): MaskingStream {
    let masker = this.maskers.get(stream);
    if (!masker) this.maskers.set(stream, masker = new MaskingStream(this.mask));
    return masker;
  }
}
