import { readdirSync, readFileSync } from 'node:fs';

/** Whether a process still runs (a zombie waiting for a reaper counts as gone). */
export function alive(pid: number): boolean {
  try { return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; }
}

/**
 * The host's pids of a run's processes, found by the run id in their environment: an agent runs
 * in a PID namespace of its own, so the pids it reports of itself mean nothing on the host.
 */
export function processesOfRun(runId: string): number[] {
  return readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name)).filter((pid) => {
    try { return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`SERVICE_RUN_ID=${runId}`); } catch { return false; }
  }).map(Number);
}
