import { constants, promises as fs } from 'node:fs';
import { join, sep } from 'node:path';
import { CapabilityError } from '../../sdk/shared/capability-error.ts';

/**
 * Path confinement for `ctx.folders`. A plugin names a file by a relative path inside a
 * mount; that text is checked strictly (no `..`, no `.`, no empty segments, no absolute
 * paths, no backslashes, no NUL or control characters, no percent escapes), then resolved
 * with realpath so that symbolic links are followed to where they really lead, and the
 * result must lie inside the mount's own real path. Comparisons are on resolved paths plus
 * a separator, never a bare startsWith on text the plugin wrote. After a file is opened,
 * the kernel's record of the open descriptor (/proc/self/fd) is checked again, which
 * closes the window between the check and the open.
 */
export const MAX_PATH_LENGTH = 1024;
const MAX_SEGMENT_BYTES = 255;
const MAX_DEPTH = 64;

const invalidPath = (message: string) => new CapabilityError(400, 'invalid_path', message);

/** The plugin's relative path, split into plain segments. `allowRoot` accepts '' and '.' for the mount itself. */
export function pathSegments(raw: unknown, allowRoot: boolean): string[] {
  if (raw === undefined || raw === null) {
    if (allowRoot) return [];
    throw invalidPath('A path inside the folder is required');
  }
  if (typeof raw !== 'string') throw invalidPath('The path must be a string');
  if (raw === '' || raw === '.') {
    if (allowRoot) return [];
    throw invalidPath('A file path inside the folder is required');
  }
  if (raw.length > MAX_PATH_LENGTH) throw invalidPath(`Paths may be at most ${MAX_PATH_LENGTH} characters`);
  if (raw.includes('\0')) throw invalidPath('Paths may not contain NUL characters');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw invalidPath('Paths may not contain control characters');
  if (raw.includes('\\')) throw invalidPath('Paths use "/" as separator; backslashes are not accepted');
  if (raw.startsWith('/')) throw invalidPath('Paths are relative to the folder; absolute paths are not accepted');
  if (/%[0-9a-f]{2}/i.test(raw)) throw invalidPath('Paths are plain text; percent-encoded sequences are not accepted');
  const segments = raw.split('/');
  if (segments.length > MAX_DEPTH) throw invalidPath(`Paths may be at most ${MAX_DEPTH} levels deep`);
  for (const segment of segments) {
    if (segment === '') throw invalidPath('Paths may not contain empty segments ("//" or a trailing "/")');
    if (segment === '.' || segment === '..') throw invalidPath('Paths may not contain "." or ".." segments');
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) throw invalidPath(`Path segments may be at most ${MAX_SEGMENT_BYTES} bytes`);
  }
  return segments;
}

/** Whether `candidate` (a resolved path) is `root` (resolved) or lies below it. */
export function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(sep) ? root : root + sep;
  return candidate.startsWith(prefix);
}

const errno = (error: unknown) => String((error as { code?: unknown })?.code ?? '');

/** The mount's real path, which must still be what the operator configured (stored as a real path). */
export async function mountRoot(folderKey: string, storedPath: string): Promise<string> {
  let real: string;
  try { real = await fs.realpath(storedPath); } catch {
    throw new CapabilityError(409, 'folder_unavailable', `Local folder "${folderKey}" is not reachable; an operator should check its configuration`);
  }
  if (real !== storedPath) {
    throw new CapabilityError(409, 'folder_unavailable', `Local folder "${folderKey}" has changed since it was configured (a parent became a link); an operator must configure it again`);
  }
  return real;
}

/** realpath of an existing entry, confined to the root; null when it does not exist. */
export async function resolveExisting(root: string, segments: string[], shown: string): Promise<string | null> {
  let real: string;
  try {
    real = await fs.realpath(join(root, ...segments));
  } catch (error) {
    if (['ENOENT', 'ENOTDIR'].includes(errno(error))) return null;
    if (errno(error) === 'ELOOP') throw escapes(shown);
    throw new CapabilityError(403, 'folder_access_failed', `"${shown}" cannot be accessed`);
  }
  if (!isInside(root, real)) throw escapes(shown);
  return real;
}

export function escapes(shown: string): CapabilityError {
  return new CapabilityError(403, 'path_outside_folder', `"${shown}" leads outside the folder (through a symbolic link); access refused`);
}

/**
 * The real directory for a write's parent, created segment by segment when missing; every
 * step is resolved and confined again, so a link placed anywhere on the way is caught.
 */
export async function ensureParent(root: string, segments: string[], shown: string): Promise<string> {
  let current = root;
  for (const segment of segments) {
    const next = join(current, segment);
    let real: string;
    try {
      real = await fs.realpath(next);
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw errno(error) === 'ELOOP' ? escapes(shown) : new CapabilityError(409, 'not_a_directory', `A parent of "${shown}" is not a directory`);
      await fs.mkdir(next, { mode: 0o755 }).catch((mkdirError: unknown) => {
        if (errno(mkdirError) !== 'EEXIST') throw new CapabilityError(409, 'folder_access_failed', `A parent directory of "${shown}" could not be created`);
      });
      real = await fs.realpath(next);
    }
    if (!isInside(root, real)) throw escapes(shown);
    const stat = await fs.stat(real);
    if (!stat.isDirectory()) throw new CapabilityError(409, 'not_a_directory', `A parent of "${shown}" is not a directory`);
    current = real;
  }
  return current;
}

/**
 * Where an open descriptor really points, from the kernel's own record. Linux only; where
 * /proc is missing the realpath checks made before the open stand alone.
 */
export async function assertDescriptorInside(fd: number, root: string, shown: string): Promise<void> {
  let actual: string;
  try { actual = await fs.readlink(`/proc/self/fd/${fd}`); } catch { return; }
  if (actual.endsWith(' (deleted)') || !isInside(root, actual)) throw escapes(shown);
}

/** Open flags: never follow a link in the last component, never block on a FIFO. */
export const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
export const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
