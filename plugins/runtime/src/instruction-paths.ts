import { PluginError } from '@keel/sdk/plugin';

/** Limits of a managed bundle: the executor writes at most 100 files into a run. */
export const MAX_BUNDLE_FILES = 50;
export const MAX_FILE_BYTES = 256 * 1024;
export const MAX_BUNDLE_BYTES = 1024 * 1024;
export const DEFAULT_ENTRY_FILE = 'AGENTS.md';
/** Where a managed bundle is written, relative to the run's working directory. */
export const MATERIALISED_DIR = '.keel/instructions';

const CONTROL = /[\u0000-\u001f\u007f\\]/;

/**
 * A file's path inside a managed bundle: relative, `/`-separated, no empty, `.` or `..`
 * segment, no backslash or control character, at most 255 characters. 422 `invalid_path`
 * otherwise: a bundle file can never name anything outside the bundle.
 */
export function bundlePath(path: unknown, field = 'path'): string {
  const invalid = (why: string) => new PluginError(422, 'invalid_path', `${field} ${why}`, { field });
  if (typeof path !== 'string' || path.length === 0) throw invalid('must be a relative file path such as AGENTS.md or docs/style.md');
  if (path.length > 255) throw invalid('must be at most 255 characters');
  if (CONTROL.test(path)) throw invalid('must not contain backslashes or control characters');
  if (path.startsWith('/') || path.startsWith('~')) throw invalid('must be relative to the bundle');
  const segments = path.split('/');
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..')) throw invalid('must not contain empty, "." or ".." segments');
  return path;
}

/** An absolute path with `.` and `..` segments resolved (the isolate has no node:path). */
function normaliseAbsolute(path: string): string {
  const out: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  return `/${out.join('/')}`;
}

/**
 * An external instructions path as it is recorded: absolute as given, or relative to the
 * adapter's `cwd`, which must then be an absolute path (422 `cwd_required`). Keel never reads
 * or writes the file: the agent's own process does, as the agent user.
 */
export function externalPath(path: unknown, cwd: unknown): string {
  if (typeof path !== 'string' || path.trim() === '' || path.length > 4096 || CONTROL.test(path)) {
    throw new PluginError(422, 'invalid_path', 'path must be a file path without control characters (at most 4096 characters)', { field: 'path' });
  }
  if (path.startsWith('/')) return normaliseAbsolute(path);
  if (typeof cwd !== 'string' || !cwd.startsWith('/')) {
    throw new PluginError(422, 'cwd_required', 'A relative instructions path needs adapterConfig.cwd (an absolute path) to resolve against; give an absolute path or set the cwd', { field: 'path' });
  }
  return normaliseAbsolute(`${cwd}/${path}`);
}
