import { stop } from 'esbuild';

/** How long esbuild's service outlives the last build: the builds of a start-up or of a burst of lifecycle changes share one. */
const IDLE_MS = 1000;

let queue: Promise<unknown> = Promise.resolve();
let pending = 0;
let idleTimer: NodeJS.Timeout | null = null;

/**
 * Runs the esbuild builds of this process one at a time, and stops esbuild's service once none
 * has waited for a second. esbuild builds in a service process of its own (about 30 MiB
 * resident) that it otherwise keeps for the life of its caller: the kernel, which builds only at
 * start-up and at lifecycle changes (install, enable, upgrade). The next build starts a fresh
 * service, a few milliseconds. One at a time: the service is shared by the process, and a
 * build that crashes it fails every build running beside it. Every build of the process goes
 * through here (plugin bundles, the kernel's worker entry); a build must not wait for another
 * from inside one.
 */
export function bundling<T>(build: () => Promise<T>): Promise<T> {
  pending++;
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = null;
  const run = queue.then(build);
  queue = run.then(settled, settled);
  return run;
}

function settled(): void {
  if (--pending > 0) return;
  idleTimer = setTimeout(() => {
    idleTimer = null;
    // A build queued from here on runs after the stop, and starts a fresh service.
    if (pending === 0) queue = queue.then(() => stop());
  }, IDLE_MS);
  idleTimer.unref();
}
