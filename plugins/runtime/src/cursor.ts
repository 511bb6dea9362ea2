import { PluginError } from '@keel/sdk/plugin';

/**
 * An opaque list cursor: the sort key of the last row answered (creation time in microseconds
 * since the epoch and id), hex-encoded. Newer rows sort before it, so paging on never skips or
 * repeats a row while runs are being created.
 */
export function encodeCursor(createdMicros: string, id: string): string {
  let hex = '';
  const text = `${createdMicros}|${id}`;
  for (let i = 0; i < text.length; i++) hex += text.charCodeAt(i).toString(16).padStart(2, '0');
  return hex;
}

export function decodeCursor(cursor: string): { createdMicros: string; id: string } {
  const invalid = new PluginError(400, 'invalid_cursor', 'cursor is not one this list answered');
  if (!/^([0-9a-f]{2}){1,120}$/.test(cursor)) throw invalid;
  let text = '';
  for (let i = 0; i < cursor.length; i += 2) text += String.fromCharCode(parseInt(cursor.slice(i, i + 2), 16));
  const [createdMicros, id] = text.split('|');
  if (!createdMicros || !/^\d{1,20}$/.test(createdMicros) || !id || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) throw invalid;
  return { createdMicros, id };
}
