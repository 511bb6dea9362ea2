import { constants, promises as fs } from 'node:fs';
import { isAbsolute, sep } from 'node:path';

/**
 * Checks a directory an operator wants to mount for a plugin: what the plugin could reach
 * through it, not only whether it exists. Every check runs on the real path (symbolic links
 * resolved), and a mount may not be the filesystem root, a system directory, or lie inside
 * or above the instance's data directory or the code of the kernel or the plugin (a plugin
 * able to read the master key or rewrite its own sandbox is not sandboxed).
 */
export interface FolderProblem { code: string; message: string }

export interface FolderInspection {
  path: string;
  realPath: string | null;
  readable: boolean;
  writable: boolean;
  healthy: boolean;
  problems: FolderProblem[];
  listing: { entries: number; truncated: boolean; sample: string[] } | null;
}

export interface ProtectedLocation { path: string; label: string }

const SYSTEM_DIRECTORIES = ['/proc', '/sys', '/dev', '/etc', '/boot', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/usr', '/run', '/var/run'];
const MAX_COUNTED_ENTRIES = 10_000;
const SAMPLE_SIZE = 10;

const within = (root: string, candidate: string) => candidate === root || candidate.startsWith(root.endsWith(sep) ? root : root + sep);
const errno = (error: unknown) => String((error as { code?: unknown })?.code ?? '');

/** Real paths of the protected locations (those that exist). */
export async function realLocations(locations: ProtectedLocation[]): Promise<ProtectedLocation[]> {
  const out: ProtectedLocation[] = [];
  for (const location of locations) {
    const real = await fs.realpath(location.path).catch(() => null);
    out.push({ path: real ?? location.path, label: location.label });
  }
  return out;
}

export async function inspectFolder(path: string, access: 'read' | 'readWrite', protectedLocations: ProtectedLocation[]): Promise<FolderInspection> {
  const result: FolderInspection = { path, realPath: null, readable: false, writable: false, healthy: false, problems: [], listing: null };
  const problem = (code: string, message: string) => result.problems.push({ code, message });
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) {
    problem('invalid_path', 'The path contains NUL or control characters.');
    return result;
  }
  if (!isAbsolute(path)) {
    problem('not_absolute', 'The path must be absolute.');
    return result;
  }
  let realPath: string;
  try {
    realPath = await fs.realpath(path);
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') problem('missing', 'Nothing exists at this path.');
    else problem('not_readable', 'The path cannot be resolved (permissions or a link loop).');
    return result;
  }
  result.realPath = realPath;
  const stat = await fs.stat(realPath).catch(() => null);
  if (!stat?.isDirectory()) {
    problem('not_directory', realPath === path ? 'The path is not a directory.' : 'The path leads (through a link) to something that is not a directory.');
    return result;
  }
  if (realPath === '/' || realPath === sep) problem('filesystem_root', 'The filesystem root cannot be mounted.');
  for (const system of SYSTEM_DIRECTORIES) {
    if (within(system, realPath)) { problem('system_directory', `System directories (${system}) cannot be mounted.`); break; }
  }
  for (const location of protectedLocations) {
    if (within(location.path, realPath)) problem('protected_location', `The folder lies inside ${location.label}.`);
    else if (within(realPath, location.path)) problem('protected_location', `The folder contains ${location.label}.`);
  }
  result.readable = await fs.access(realPath, constants.R_OK | constants.X_OK).then(() => true, () => false);
  if (!result.readable) problem('not_readable', 'The folder is not readable by the service.');
  if (access === 'readWrite') {
    result.writable = await fs.access(realPath, constants.W_OK | constants.X_OK).then(() => true, () => false);
    if (!result.writable) problem('not_writable', 'The plugin needs read-write access, and the folder is not writable by the service.');
  }
  if (result.readable) result.listing = await summarise(realPath);
  result.healthy = result.problems.length === 0;
  return result;
}

async function summarise(dir: string): Promise<FolderInspection['listing']> {
  try {
    const handle = await fs.opendir(dir);
    const names: string[] = [];
    let entries = 0;
    let truncated = false;
    for await (const dirent of handle) {
      if (entries >= MAX_COUNTED_ENTRIES) { truncated = true; break; }
      entries++;
      names.push(dirent.name);
    }
    names.sort();
    return { entries, truncated, sample: names.slice(0, SAMPLE_SIZE) };
  } catch {
    return null;
  }
}
