/**
 * Absolute http(s) URLs taken apart without the platform's URL class (the sandbox has none).
 * Only what source parsing needs: scheme, credentials present, host (lower-cased, port kept
 * apart) and the path.
 */
export interface UrlParts { protocol: 'http:' | 'https:' | string; hasCredentials: boolean; hostname: string; host: string; pathname: string; href: string }

export function parseUrl(text: string): UrlParts | null {
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/i.exec(text.trim());
  if (!match) return null;
  const authority = match[2]!;
  const at = authority.lastIndexOf('@');
  const host = (at === -1 ? authority : authority.slice(at + 1)).toLowerCase();
  const hostname = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
  if (hostname === '' || /[\s\\]/.test(host)) return null;
  return { protocol: `${match[1]!.toLowerCase()}:`, hasCredentials: at !== -1, hostname, host, pathname: match[3] || '/', href: text.trim() };
}
