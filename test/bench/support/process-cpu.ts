import { readFile } from 'node:fs/promises';
import { processTree } from './process-memory.ts';

/** CPU seconds so far of a process (utime + stime), and of its children it has reaped (cutime + cstime). */
async function cpuOf(pid: number): Promise<{ own: number; reaped: number }> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Fields after the command (which may hold spaces) start at field 3, state.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ').map(Number);
  const tick = 100; // USER_HZ, 100 on Linux
  return { own: ((fields[11] ?? 0) + (fields[12] ?? 0)) / tick, reaped: ((fields[13] ?? 0) + (fields[14] ?? 0)) / tick };
}

/**
 * CPU seconds used so far by the database (the postmaster, its live backends and those that
 * exited), by Keel (`keel`: the kernel process, `kernel`, and its plugin workers, `workers`)
 * and by the agent processes (those alive, by their script, and every child the kernel has
 * reaped: agents, bar a rare helper). Differences of two readings are what each used between them.
 */
export interface CpuReading { at: number; database: number; keel: number; kernel: number; workers: number; agents: number }

export async function readCpu(kernelPid: number, agentMarker?: string): Promise<CpuReading> {
  const tree = await processTree(kernelPid);
  const byPid = new Map(tree.map((p) => [p.pid, p]));
  const parents = new Map<number, number>();
  for (const p of tree) {
    const text = await readFile(`/proc/${p.pid}/stat`, 'utf8').catch(() => '');
    parents.set(p.pid, Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]));
  }
  const reading: CpuReading = { at: performance.now(), database: 0, keel: 0, kernel: 0, workers: 0, agents: 0 };
  for (const p of tree) {
    const cpu = await cpuOf(p.pid);
    const parentKind = byPid.get(parents.get(p.pid) ?? -1)?.kind;
    if (p.kind === 'kernel') { reading.kernel += cpu.own; reading.agents += cpu.reaped; continue; }
    if (p.kind === 'postgres') { reading.database += cpu.own + (parentKind === 'postgres' ? 0 : cpu.reaped); continue; }
    if (p.kind === 'worker') { reading.workers += cpu.own; continue; }
    // A live agent process (its command names the agent's script); other helpers of the kernel (esbuild's service) are left out.
    if (!agentMarker) continue;
    const cmdline = await readFile(`/proc/${p.pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(agentMarker)) reading.agents += cpu.own;
  }
  reading.keel = reading.kernel + reading.workers;
  return reading;
}
