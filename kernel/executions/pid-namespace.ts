import { execFileSync } from 'node:child_process';
import type { Logger } from 'pino';

/**
 * Each agent process starts in a PID namespace of its own, with a /proc of its own mounted in a
 * private mount namespace (util-linux `unshare`), then drops to the agent user (`setpriv`). Every
 * run has the same uid, so without this one run could read another concurrent run's
 * `/proc/<pid>/environ`, and with it that run's token; inside its namespace a run sees only its
 * own processes. When the namespace's first process ends, the kernel kills everything left in it,
 * daemons that left the process group too.
 *
 * The first process of a PID namespace ignores signals it has no handler for, so it is a shell
 * that waits for the agent rather than the agent itself: the agent, in the same process group,
 * receives the executor's SIGTERM as it would outside, and the shell reports a death by signal
 * the way shells do (128 + the signal's number).
 */
// A background command of a non-interactive shell reads /dev/null: the shell's standard input (a
// tool launch's prompt) is kept on fd 3 and handed to it explicitly.
const SHIM = 'exec 3<&0; "$@" <&3 3<&- & exec 3<&-; wait "$!"';
/** The shell exports PWD of its own accord: taken out again unless the agent's environment named it. */
const SHIM_WITHOUT_PWD = `unset PWD; ${SHIM}`;

export interface Namespaced { command: string; args: string[] }

export function namespacedCommand(command: string, args: string[], uid: number, gid: number, env: Record<string, string> = {}): Namespaced {
  return {
    command: 'unshare',
    args: [
      '--pid', '--fork', '--mount-proc', '--kill-child', '--',
      'setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--',
      '/bin/sh', '-c', 'PWD' in env ? SHIM : SHIM_WITHOUT_PWD, 'sh', command, ...args,
    ],
  };
}

/** Whether this machine lets the server start PID namespaces (root, util-linux, no seccomp veto); probed once per process. */
export function pidNamespacesAvailable(log: Logger, uid: number, gid: number): boolean {
  try {
    // Inside its own namespace the probe's shell has one of the first pids.
    const { command, args } = namespacedCommand('/bin/sh', ['-c', 'test "$$" -le 3'], uid, gid);
    execFileSync(command, args, { stdio: 'ignore', timeout: 10_000, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
    return true;
  } catch (error) {
    log.warn({ err: error }, 'agent processes cannot have PID namespaces of their own here (unshare failed): concurrent runs can read each other\'s /proc');
    return false;
  }
}
