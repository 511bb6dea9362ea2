import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CredentialMask } from '../../kernel/executions/credential-mask.ts';
import { OutputSpool, SPOOL_FOLDER, SPOOL_MEMORY_BYTES } from '../../kernel/executions/output-spool.ts';
import { waitFor } from '../support/wait-for.ts';

const SECRET = 'sk-spool-credential-1234';
let dataDir: string;
beforeEach(async () => { dataDir = await mkdtemp(join(tmpdir(), 'keel-spool-')); });
afterEach(async () => { await rm(dataDir, { recursive: true, force: true }); });

/** Writes `text` in chunks of `size`, so that the credential is split across chunks somewhere. */
function feed(spool: OutputSpool, stream: 'stdout' | 'stderr', text: string, size: number): void {
  for (let at = 0; at < text.length; at += size) spool.write(stream, text.slice(at, at + size));
}
const folderOf = (id: string) => join(dataDir, SPOOL_FOLDER, id);

describe('the copy of a process\'s output', () => {
  it('never touches the disk for output that fits in memory and is not kept', async () => {
    const spool = new OutputSpool(dataDir, 'small-dropped', new CredentialMask([SECRET]));
    feed(spool, 'stdout', `hello ${SECRET}\n`.repeat(100), 7);
    await expect(stat(folderOf('small-dropped'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await spool.close(false)).toBe(false);
    await expect(stat(folderOf('small-dropped'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('writes output held in memory when it is kept at the end, masked across chunk boundaries', async () => {
    const spool = new OutputSpool(dataDir, 'small-kept', new CredentialMask([SECRET]));
    feed(spool, 'stdout', `out ${SECRET} line\n`.repeat(50), 5);
    feed(spool, 'stderr', `err ${SECRET}`, 3);
    expect(await spool.close(true)).toBe(true);
    expect(await readFile(join(folderOf('small-kept'), 'stdout.log'), 'utf8')).toBe('out *** line\n'.repeat(50));
    expect(await readFile(join(folderOf('small-kept'), 'stderr.log'), 'utf8')).toBe('err ***');
  });

  it('goes to disk once memory holds its bound, complete and in order, and removes the files when not kept', async () => {
    const line = `${'x'.repeat(1000)} ${SECRET}\n`;
    const count = Math.ceil((3 * SPOOL_MEMORY_BYTES) / line.length);
    const kept = new OutputSpool(dataDir, 'large-kept', new CredentialMask([SECRET]));
    feed(kept, 'stdout', line.repeat(count), 4093);
    // On disk while the process still writes (the file opens asynchronously).
    await waitFor(async () => (await stat(join(folderOf('large-kept'), 'stdout.log')).catch(() => null))?.isFile(), 'the copy on disk', 5_000);
    expect(await kept.close(true)).toBe(true);
    expect(await readFile(join(folderOf('large-kept'), 'stdout.log'), 'utf8')).toBe(`${'x'.repeat(1000)} ***\n`.repeat(count));

    const dropped = new OutputSpool(dataDir, 'large-dropped', new CredentialMask([SECRET]));
    feed(dropped, 'stdout', line.repeat(count), 4093);
    expect(await dropped.close(false)).toBe(false);
    await expect(stat(folderOf('large-dropped'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
