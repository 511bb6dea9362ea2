import { cleanFilename } from './file-names.ts';

/** RFC 5987 `attr-char`s stay; everything else of the UTF-8 bytes is percent-encoded. */
function encodeExtValue(text: string): string {
  return encodeURIComponent(text).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * The `Content-Disposition` of a served blob: the name cleaned again (a row stored before names
 * were cleaned of invisible characters may still hold some), an ASCII fallback in `filename`
 * and the exact name in `filename*` (RFC 6266, RFC 5987).
 */
export function contentDisposition(kind: 'inline' | 'attachment', name: string | null): string {
  const filename = cleanFilename(name ?? undefined) ?? 'download';
  return `${kind}; filename="${filename.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeExtValue(filename)}`;
}
