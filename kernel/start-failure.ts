import type { Logger } from 'pino';

const STEP_TIMEOUT_MS = 10_000;

/**
 * Releases what a start that failed part-way had started, in the order given. Every step runs
 * whatever the others did, and none may hold the failure: a step that throws is logged, one
 * that hangs (a pool waiting for a connection that is still checked out) is left after
 * `stepTimeoutMs`. The caller then reports why the start failed and the process ends; a
 * process whose start failed must never stay up silently.
 */
export async function releaseAfterFailedStart(log: Logger, steps: ReadonlyArray<readonly [string, () => unknown]>, stepTimeoutMs = STEP_TIMEOUT_MS): Promise<void> {
  for (const [what, step] of steps) {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timed out'>((resolve) => { timer = setTimeout(() => resolve('timed out'), stepTimeoutMs); });
    try {
      const outcome = await Promise.race([Promise.resolve().then(step), timedOut]);
      if (outcome === 'timed out') log.warn({ step: what, timeoutMs: stepTimeoutMs }, 'releasing after a failed start: step did not finish; continuing');
    } catch (error) {
      log.warn({ step: what, err: error }, 'releasing after a failed start: step failed; continuing');
    } finally {
      clearTimeout(timer);
    }
  }
}
