import { PluginError } from '@keel/sdk/plugin';

/** Files at the wiki root that tell agents how to work; no tool ever writes them. */
export const CONTROL_FILES = ['AGENTS.md', 'IDEA.md'] as const;
export const DEFAULT_SPACE = 'default';
export const SPACE_SLUG = /^[a-z0-9][a-z0-9-]{0,47}$/;
/** Page folders bootstrap lays out in every space's wiki/. */
export const PAGE_FOLDERS = ['sources', 'projects', 'entities', 'concepts', 'synthesis'] as const;

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9 _.,()+-]{0,119}$/;

/** Where a space's files live, relative to the wiki root. */
export function spaceRoot(slug: string): string {
  return slug === DEFAULT_SPACE ? '' : `spaces/${slug}/`;
}
export function wikiDir(slug: string): string {
  return `${spaceRoot(slug)}wiki`;
}
export function rawDir(slug: string): string {
  return `${spaceRoot(slug)}raw`;
}

/**
 * A page or source name as given by a caller, checked before any file is touched: relative,
 * `/`-separated, each segment starting with a letter or digit (no `.`/`..`, no hidden files),
 * no backslashes, percent escapes or control characters. The folder capability confines the
 * path again (links included); this check gives the caller a clear answer first.
 */
export function checkedName(name: string, what: 'page' | 'source'): string {
  const segments = name.split('/');
  const bad = name.length > 300 || name.startsWith('/') || segments.some((segment) => !SEGMENT.test(segment) || segment.endsWith('.'));
  if (bad) {
    throw new PluginError(400, 'invalid_path', `${what} path "${name.slice(0, 100)}" is not a relative path of letters, digits and ' _.,()+-' (no '..', no leading '/' or '.', no '\\' or '%')`);
  }
  if (what === 'page' && !name.toLowerCase().endsWith('.md')) throw new PluginError(400, 'invalid_path', `page path "${name}" must end in .md`);
  return name;
}

/** Pages a tool may write: never one named like a control file, never the append-only log. */
export function writablePage(name: string): string {
  const page = checkedName(name, 'page');
  const base = page.split('/').pop()!;
  if (CONTROL_FILES.some((file) => file.toLowerCase() === base.toLowerCase())) {
    throw new PluginError(403, 'control_file_protected', `${base} is a control file name; wiki tools never write control files`);
  }
  if (page === 'log.md') throw new PluginError(403, 'control_file_protected', 'log.md is append-only: use wiki_append_log');
  return page;
}

/** A wiki-root relative path to the page of a space, when it is one (for changes seen on disk). */
export function pageOfRootPath(path: string, spaces: readonly string[]): { space: string; page: string } | null {
  if (!path.toLowerCase().endsWith('.md')) return null;
  const inside = (prefix: string) => (path.startsWith(prefix) ? path.slice(prefix.length) : null);
  const direct = inside('wiki/');
  if (direct) return { space: DEFAULT_SPACE, page: direct };
  const match = /^spaces\/([a-z0-9][a-z0-9-]{0,47})\/wiki\/(.+)$/.exec(path);
  if (match && spaces.includes(match[1]!)) return { space: match[1]!, page: match[2]! };
  return null;
}
