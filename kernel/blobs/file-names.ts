import { stripInvisibleCharacters } from '../../sdk/shared/invisible-characters.ts';

/** Keeps a display name only: no directories, no control, bidi or invisible characters, bounded length. */
export function cleanFilename(name: string | undefined): string | null {
  if (!name) return null;
  // Invisible characters go first, so that none can hide a separator or survive the trim.
  const base = stripInvisibleCharacters(name).split(/[\\/]/).pop() ?? '';
  const cleaned = base.trim().slice(0, 255).toWellFormed().trim();
  return cleaned || null;
}
