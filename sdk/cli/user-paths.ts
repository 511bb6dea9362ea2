import { relative, resolve } from 'node:path';

/**
 * Paths on the command line are the user's: `npm run keel` runs in the project root, so they
 * resolve against the directory npm was started from (INIT_CWD) when there is one.
 */
export function userPath(path: string): string {
  return resolve(process.env.INIT_CWD ?? process.cwd(), path);
}

/** A path as the user would type it from where they are. */
export function shownPath(path: string): string {
  const shown = relative(process.env.INIT_CWD ?? process.cwd(), path);
  return shown.startsWith('..') ? path : shown || '.';
}
