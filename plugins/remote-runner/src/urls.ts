/**
 * Absolute http(s) URLs, parsed by hand: the isolate plugins run in has no URL class. Enough
 * for a configured address: scheme, credentials, host (a name, an IPv4 or a bracketed IPv6
 * address), port, path, and whether a query or fragment was given.
 */
export interface ParsedUrl { protocol: 'http:' | 'https:'; hasCredentials: boolean; hostname: string; port: string; pathname: string; hasQueryOrFragment: boolean; origin: string }

const SHAPE = /^(https?):\/\/([^/?#]*)([^?#]*)([?#].*)?$/i;
const HOST = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i;

export function parseHttpUrl(text: string): ParsedUrl | null {
  const match = SHAPE.exec(text);
  if (!match) return null;
  const [, scheme, authority, path, rest] = match;
  const at = authority!.lastIndexOf('@');
  const hostPart = at === -1 ? authority! : authority!.slice(at + 1);
  const host = HOST.exec(hostPart);
  if (!host || host[1]!.length === 0) return null;
  const port = host[2] ?? '';
  if (port !== '' && Number(port) > 65535) return null;
  const protocol = `${scheme!.toLowerCase()}:` as ParsedUrl['protocol'];
  const hostname = host[1]!.toLowerCase();
  const defaultPort = protocol === 'https:' ? '443' : '80';
  const shownPort = port === '' || port === defaultPort ? '' : `:${port}`;
  return {
    protocol, hasCredentials: at !== -1, hostname, port, pathname: path === '' ? '/' : path!, hasQueryOrFragment: rest !== undefined,
    origin: `${protocol}//${hostname}${shownPort}`,
  };
}
