import { PluginError } from '@keel/sdk/plugin';

/**
 * An opaque list cursor: the sort key of the last row answered (its sort time in microseconds,
 * creation or last update, and id), hex-encoded. Rows created after a page was read sort before
 * it, so paging on never skips or repeats a row under concurrent inserts.
 */
export interface CursorKey { createdAt: string; id: string }

export function encodeCursor(key: CursorKey): string {
  const text = `${key.createdAt}|${key.id}`;
  let hex = '';
  for (let i = 0; i < text.length; i++) hex += text.charCodeAt(i).toString(16).padStart(2, '0');
  return hex;
}

export const UUID_PATTERN = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const UUID = new RegExp(`^${UUID_PATTERN}$`);

/** `id` is what a cursor of the list may name: a uuid, or for lists of several kinds of row a prefixed one. */
export function decodeCursor(cursor: string, id: RegExp = UUID): CursorKey {
  const invalid = new PluginError(400, 'invalid_cursor', 'cursor is not one this list answered');
  if (!/^([0-9a-f]{2}){1,120}$/.test(cursor)) throw invalid;
  let text = '';
  for (let i = 0; i < cursor.length; i += 2) text += String.fromCharCode(parseInt(cursor.slice(i, i + 2), 16));
  const [createdAt, key] = text.split('|');
  if (!createdAt || !/^\d{1,20}$/.test(createdAt) || !key || !id.test(key)) throw invalid;
  return { createdAt, id: key };
}
