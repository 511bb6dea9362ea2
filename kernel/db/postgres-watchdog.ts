import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';

/**
 * Stops the embedded PostgreSQL when the Keel process that started it dies without stopping it
 * (SIGKILL, the OOM killer). The postmaster runs in a process group of its own, so signals sent
 * to Keel's group never reach it and Keel stops it last, after its requests have drained; the
 * price is that nothing would stop it if Keel itself were killed outright.
 *
 * The watchdog is a shell in PostgreSQL's group, as PostgreSQL's user, reading a pipe whose
 * only writer is this process: the kernel closes every descriptor of a process that ends,
 * however it ends, so the read sees end-of-file exactly when Keel is gone. It then asks the
 * postmaster for a fast shutdown, but only if the cluster's postmaster.pid still names that very
 * postmaster (PostgreSQL removes the file when it stops). Keel dismisses the watchdog (kills
 * its group) once that postmaster has exited, so it never signals a pid the system may have
 * handed to another process since. The next start's own check (a live or stale
 * postmaster.pid) stays as the last resort should the watchdog be killed as well.
 */
const SCRIPT = 'cat >/dev/null; [ "$(head -n 1 "$1/postmaster.pid" 2>/dev/null)" = "$2" ] && kill -INT "$2"; exit 0';

export interface PostgresWatchdog {
  /** Ends the watchdog without it signalling anything: its postmaster has exited. */
  dismiss(): void;
}

export function watchPostmaster(clusterDir: string, postmasterPid: number, ids: { uid?: number; gid?: number }): PostgresWatchdog {
  const child = spawn('/bin/sh', ['-c', SCRIPT, 'keel-postgres-watchdog', clusterDir, String(postmasterPid)], {
    ...ids, detached: true, stdio: ['pipe', 'ignore', 'ignore'],
  });
  // Neither the watchdog nor its pipe keeps this process's event loop alive.
  child.on('error', () => undefined);
  child.stdin!.on('error', () => undefined);
  child.unref();
  (child.stdin as unknown as Socket).unref();
  return {
    dismiss() {
      // The whole group (the shell and its cat), before the pipe closes: no end-of-file, no signal.
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone already */ }
      child.stdin!.destroy();
    },
  };
}
