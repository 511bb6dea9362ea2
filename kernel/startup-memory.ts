import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type FullCollection = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Gives back what start-up alone made the kernel hold. Migrations, plugin builds, manifest
 * checks and loading the kernel's modules through the type stripper leave about 20 MiB of
 * garbage in V8's old generation and a young generation grown to its full 32 MiB (two 16 MiB
 * semi-spaces, node-flags.ts), and V8 collects neither while the process has nothing to do: it
 * stayed resident for the life of an idle kernel. One memory-reducing collection right after
 * start-up (what V8 runs on a low-memory notification: every collectable object, then the
 * young generation shrunk back to what is in use) took an idle kernel from about 208 to 149 MiB
 * resident; under load the young generation grows again as it needs to.
 *
 * The collection function is taken from a context of its own and the flag is turned off again
 * at once: no later context, the kernel's included, gets a global `gc`.
 */
export function releaseStartupMemory(): void {
  setFlagsFromString('--expose-gc');
  let collect: FullCollection;
  try {
    collect = runInNewContext('gc') as FullCollection;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  collect({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
