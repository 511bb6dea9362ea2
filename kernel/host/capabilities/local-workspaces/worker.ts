import { localWorkspaces as spec } from '../../../../sdk/capabilities/workspaces.ts';
import { execFile, execFileSync } from 'node:child_process';
import { constants, promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { FolderMount } from '../../protocol/messages.ts';
import type { Invocation } from '../../worker/invocation.ts';
import { ensureParent, escapes, isInside, mountRoot, resolveExisting } from '../../../files/folder-paths.ts';
import { CapabilityError, type WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.workspaces`: working directories by absolute path, confined to the folders an operator
 * mounted for the invocation's company (the same mounts `ctx.folders` uses, attached to the
 * invocation by the kernel). The path is checked as text first (absolute, no `.`/`..`, no
 * control characters), matched to the mount it lies in, and then resolved segment by segment
 * with the mount's own confinement (kernel/files/folder-paths.ts), so a link never leads out of the mount.
 * Errors name the path the plugin gave, never another host path.
 */
const MAX_PATH = 4096;
const GIT_TIMEOUT_MS = 20_000;
const GIT_OUTPUT_BYTES = 4 * 1024 * 1024;
const SAMPLE = 20;

interface Located { key: string; mount: FolderMount & { path: string }; segments: string[]; shown: string }

function locate(invocation: Invocation, raw: unknown): Located {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_PATH || !raw.startsWith('/')) {
    throw new CapabilityError(400, 'invalid_path', `The path must be absolute and at most ${MAX_PATH} characters`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw new CapabilityError(400, 'invalid_path', 'Paths may not contain NUL or control characters');
  const parts = raw.split('/').filter((part) => part !== '');
  if (parts.some((part) => part === '.' || part === '..')) throw new CapabilityError(400, 'invalid_path', 'Paths may not contain "." or ".." segments');
  const shown = `/${parts.join('/')}`;
  const mounts = invocation.message.folders;
  if (!mounts) throw new CapabilityError(403, 'company_scope_required', 'Working directories belong to a company; this invocation has none');
  let best: Located | null = null;
  for (const [key, mount] of Object.entries(mounts)) {
    if (mount.path === null || !isInside(mount.path, shown)) continue;
    const rootParts = mount.path.split('/').filter((part) => part !== '');
    if (best && best.mount.path.length >= mount.path.length) continue;
    best = { key, mount: mount as FolderMount & { path: string }, segments: parts.slice(rootParts.length), shown };
  }
  if (!best) {
    throw new CapabilityError(403, 'path_not_approved', `"${shown}" lies outside every folder an operator mounted for this company; an operator mounts one with PUT /api/plugins/{pluginId}/companies/{companyId}/local-folders/{folderKey}`);
  }
  return best;
}

function requireWritable(found: Located): void {
  if (found.mount.access !== 'readWrite') throw new CapabilityError(403, 'folder_read_only', `"${found.shown}" lies in folder "${found.key}", which is declared read-only`);
}

async function describe(found: Located) {
  const root = await mountRoot(found.key, found.mount.path);
  const real = await resolveExisting(root, found.segments, found.shown);
  if (!real) return { path: found.shown, folderKey: found.key, exists: false, isDirectory: false, writable: false };
  const stat = await fs.stat(real);
  const writable = stat.isDirectory() && found.mount.access === 'readWrite'
    && await fs.access(real, constants.W_OK | constants.X_OK).then(() => true, () => false);
  return { path: found.shown, folderKey: found.key, exists: true, isDirectory: stat.isDirectory(), writable };
}

async function inspect(invocation: Invocation, args: unknown[]) {
  return describe(locate(invocation, args[0]));
}

async function makeDirectory(invocation: Invocation, args: unknown[]) {
  const found = locate(invocation, args[0]);
  requireWritable(found);
  const root = await mountRoot(found.key, found.mount.path);
  await ensureParent(root, found.segments, found.shown);
  return describe(found);
}

async function removeDirectory(invocation: Invocation, args: unknown[]) {
  const found = locate(invocation, args[0]);
  requireWritable(found);
  if (found.segments.length === 0) throw new CapabilityError(400, 'invalid_path', `"${found.shown}" is the mounted folder itself; only directories inside it can be removed`);
  const root = await mountRoot(found.key, found.mount.path);
  const parent = await resolveExisting(root, found.segments.slice(0, -1), found.shown);
  if (!parent) return { removed: false };
  const target = join(parent, found.segments[found.segments.length - 1]!);
  const stat = await fs.lstat(target).catch(() => null);
  if (!stat) return { removed: false };
  // The last component itself must be a directory, not a link to one: removal never follows links.
  if (stat.isSymbolicLink()) throw escapes(found.shown);
  if (!stat.isDirectory()) throw new CapabilityError(409, 'not_a_directory', `"${found.shown}" is not a directory`);
  if (!isInside(root, target)) throw escapes(found.shown);
  await fs.rm(target, { recursive: true, force: true });
  return { removed: true };
}

let gitIdentity: { uid: number; gid: number } | null | undefined;
/**
 * Whom git runs as: never the server's own user when the server is root. The agent user
 * (`keel-agent`, the user agent processes run as, who own these working copies) when it
 * exists, else `nobody`. A server that is not root runs git as itself, as it runs agents.
 */
function gitUser(): { uid: number; gid: number } | null {
  if (gitIdentity !== undefined) return gitIdentity;
  if (process.getuid?.() !== 0) return (gitIdentity = null);
  try {
    const uid = Number.parseInt(execFileSync('id', ['-u', 'keel-agent'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }), 10);
    const gid = Number.parseInt(execFileSync('id', ['-g', 'keel-agent'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }), 10);
    if (Number.isInteger(uid) && Number.isInteger(gid)) return (gitIdentity = { uid, gid });
  } catch { /* no agent user yet */ }
  return (gitIdentity = { uid: 65534, gid: 65534 });
}

function runGit(cwd: string): Promise<{ code: number; stdout: string }> {
  const user = gitUser();
  return new Promise((resolve, reject) => {
    execFile('git', [
      // The repository's own configuration may name programs (fsmonitor, hooks): not run here.
      '-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', '-c', 'safe.directory=*', '-c', 'core.untrackedCache=false',
      '--no-optional-locks', 'status', '--porcelain=v1', '--branch', '--untracked-files=normal', '--ignore-submodules=all',
    ], {
      cwd, timeout: GIT_TIMEOUT_MS, maxBuffer: GIT_OUTPUT_BYTES, encoding: 'utf8', killSignal: 'SIGKILL',
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/nonexistent', LANG: 'C', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' },
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    }, (error, stdout, stderr) => {
      if (!error) return resolve({ code: 0, stdout });
      const code = typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1;
      if (code === 128 && /not a git repository/i.test(stderr)) return resolve({ code, stdout: '' });
      reject(new CapabilityError(409, 'git_status_failed', code === -1 ? 'git status did not finish (timed out or could not start)' : `git status failed (exit ${code})`));
    });
  });
}

async function gitStatus(invocation: Invocation, args: unknown[]) {
  const found = locate(invocation, args[0]);
  const root = await mountRoot(found.key, found.mount.path);
  const real = await resolveExisting(root, found.segments, found.shown);
  if (!real) throw new CapabilityError(404, 'path_not_found', `"${found.shown}" does not exist`);
  if (!(await fs.stat(real)).isDirectory()) throw new CapabilityError(400, 'not_a_directory', `"${found.shown}" is not a directory`);
  const { code, stdout } = await runGit(real);
  if (code !== 0) return { repository: false, branch: null, clean: true, changedFiles: 0, sample: [] };
  const lines = stdout.split('\n').filter((line) => line.length > 0);
  const head = lines[0]?.startsWith('## ') ? lines.shift()!.slice(3) : '';
  // `main...origin/main [ahead 1]`, `No commits yet on main`, `HEAD (no branch)`.
  const branch = head.replace(/^(No commits yet on |Initial commit on )/, '').split('...')[0]!.split(' ')[0] || null;
  return {
    repository: true,
    branch: branch === 'HEAD' ? null : branch,
    clean: lines.length === 0,
    changedFiles: lines.length,
    sample: lines.slice(0, SAMPLE),
  };
}

export function workspacesCapability(): WorkerCapability {
  return { inspect, makeDirectory, removeDirectory, gitStatus };
}

export const workerSide = workerUnit(spec, () => ({ workspaces: workspacesCapability() }));
