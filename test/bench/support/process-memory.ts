import { readFile } from 'node:fs/promises';

/**
 * Memory of a process tree as the machine pays for it. Resident sizes (RSS) count pages that
 * several processes share (PostgreSQL's shared buffers, the Node.js binary) once per process;
 * the proportional set size (PSS) splits each shared page among its sharers, so the PSS of
 * every process of an instance adds up to what the instance really occupies.
 */
export interface ProcessMemory { pid: number; kind: 'kernel' | 'worker' | 'postgres' | 'other'; pssKb: number; rssKb: number }

async function children(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text.trim().split(/\s+/).filter(Boolean).map(Number);
}

async function field(pid: number, file: string, name: string): Promise<number> {
  const text = await readFile(`/proc/${pid}/${file}`, 'utf8').catch(() => '');
  return Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

/** Every process of the tree rooted at `root` (the kernel, its plugin workers, its embedded PostgreSQL). */
export async function processTree(root: number): Promise<ProcessMemory[]> {
  const out: ProcessMemory[] = [];
  const visit = async (pid: number, depth: number): Promise<void> => {
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replace(/\0/g, ' ');
    const kind = depth === 0 ? 'kernel' : cmdline.includes('plugin-worker') ? 'worker' : /postgres/.test(cmdline) ? 'postgres' : 'other';
    out.push({ pid, kind, pssKb: await field(pid, 'smaps_rollup', 'Pss'), rssKb: await field(pid, 'status', 'VmRSS') });
    for (const child of await children(pid)) await visit(child, depth + 1);
  };
  await visit(root, 0);
  return out;
}

export const mib = (kb: number) => `${(kb / 1024).toFixed(0)} MiB`;
export const sum = (list: ProcessMemory[], kind?: ProcessMemory['kind']) => list.filter((p) => !kind || p.kind === kind).reduce((total, p) => total + p.pssKb, 0);
