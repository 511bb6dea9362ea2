import { execFileSync } from 'node:child_process';
import { chmod, chown, mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { makeTraversable } from '../db/embedded-postgres.ts';
import { pidNamespacesAvailable } from './pid-namespace.ts';

/**
 * The operating-system user agent processes run as: `keel-agent`, unprivileged and distinct
 * from the server's user, so that an agent cannot read the server's environment (/proc of the
 * server), the data directory's private files (0600, the server's) or the vault's key. Created
 * when missing if the server runs as root, as the embedded PostgreSQL's `postgres` user is.
 * A server that does not run as root cannot switch users: agents then run as the server's own
 * user (with the environment still built from scratch), and the start logs a warning once.
 */
export const AGENT_USER = 'keel-agent';

/** `pidNamespaces`: each run starts in a PID namespace of its own (pid-namespace.ts). */
export interface AgentIdentity { uid: number; gid: number; separate: boolean; pidNamespaces: boolean }

export function agentIdentity(log: Logger): AgentIdentity {
  const uid = process.getuid?.() ?? -1;
  const gid = process.getgid?.() ?? -1;
  if (uid !== 0) {
    log.warn({ user: uid }, `agent processes run as the server's own user: only a server started as root can run them as ${AGENT_USER}`);
    return { uid, gid, separate: false, pidNamespaces: false };
  }
  let ids = lookup();
  if (!ids) {
    execFileSync('useradd', ['--system', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', '--user-group', AGENT_USER], { stdio: 'ignore' });
    log.info({ user: AGENT_USER }, 'created the unprivileged user agent processes run as');
    ids = lookup();
    if (!ids) throw new Error(`could not create the system user ${AGENT_USER} (useradd)`);
  }
  return { ...ids, separate: true, pidNamespaces: pidNamespacesAvailable(log, ids.uid, ids.gid) };
}

function lookup(): { uid: number; gid: number } | null {
  try {
    const uid = Number.parseInt(execFileSync('id', ['-u', AGENT_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }), 10);
    const gid = Number.parseInt(execFileSync('id', ['-g', AGENT_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }), 10);
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
  } catch {
    return null;
  }
}

/**
 * Per-run working directories live under `<dataDir>/agent-work`, a folder the server owns with
 * mode 0711: the agent user may pass through it to its own run's folder (0700, owned by the
 * agent user) but may not list it, and nothing else of the data directory is readable to it.
 */
export class WorkDirectories {
  private readonly root: string;
  private readonly identity: AgentIdentity;

  private readonly log: Logger;
  private prepared: Promise<void> | null = null;

  constructor(dataDir: string, identity: AgentIdentity, log: Logger) {
    this.root = join(dataDir, 'agent-work');
    this.identity = identity;
    this.log = log;
  }

  async create(executionId: string): Promise<string> {
    this.prepared ??= (async () => {
      await mkdir(this.root, { recursive: true, mode: 0o711 });
      await chmod(this.root, 0o711);
      if (this.identity.separate) await makeTraversable(join(this.root, 'x'), this.log);
    })();
    await this.prepared;
    const dir = join(this.root, executionId);
    await mkdir(dir, { mode: 0o700 });
    await this.own(dir);
    return dir;
  }

  /** Gives a path the run wrote (a file of the plugin's) to the agent user. */
  async own(path: string): Promise<void> {
    if (this.identity.separate) await chown(path, this.identity.uid, this.identity.gid);
  }

  async remove(dir: string): Promise<void> {
    if (!dir.startsWith(`${this.root}/`)) return;
    await rm(dir, { recursive: true, force: true });
  }

  async exists(dir: string): Promise<boolean> {
    return (await stat(dir).catch(() => null))?.isDirectory() ?? false;
  }
}
