/**
 * Source locators, canonicalised the same way when a rule stores them and when an evaluation
 * names one, so that a deny rule written as `https://www.GitHub.com/Acme/Tools.git` still
 * catches `https://github.com/acme/tools`. The sandbox has no URL class: this reads the parts
 * of a URL a locator can carry (scheme, user info, host, path, query, fragment) itself.
 */

interface ParsedUrl {
  scheme: string;
  username: string;
  password: string | null;
  /** Lower case, without the port. */
  hostname: string;
  port: string;
  path: string;
  query: string;
  fragment: string;
}

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$/s;
const HOST = /^[^\s/?#@\\[\]<>^|%]+$/;
const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443' };

/** The parts of a URL, or null when the text is not one (a bare `owner/repo`, a path). */
function parseUrl(text: string): ParsedUrl | null {
  const match = SCHEME.exec(text);
  if (!match) return null;
  const scheme = match[1]!.toLowerCase();
  let rest = match[2]!;
  let fragment = '';
  const hash = rest.indexOf('#');
  if (hash >= 0) { fragment = rest.slice(hash + 1); rest = rest.slice(0, hash); }
  let query = '';
  const question = rest.indexOf('?');
  if (question >= 0) { query = rest.slice(question + 1); rest = rest.slice(0, question); }
  const web = scheme === 'http' || scheme === 'https';
  if (!rest.startsWith('//')) {
    // A web URL always has a host; other schemes may be opaque (`mailto:x`).
    if (web) return null;
    return { scheme, username: '', password: null, hostname: '', port: '', path: rest, query, fragment };
  }
  rest = rest.slice(2);
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash) : '';
  let username = '';
  let password: string | null = null;
  let hostPort = authority;
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    const info = authority.slice(0, at);
    hostPort = authority.slice(at + 1);
    const colon = info.indexOf(':');
    username = colon >= 0 ? info.slice(0, colon) : info;
    password = colon >= 0 ? info.slice(colon + 1) : null;
  }
  let hostname = hostPort;
  let port = '';
  const portMatch = /^(.*):(\d*)$/.exec(hostPort);
  if (portMatch) { hostname = portMatch[1]!; port = portMatch[2]!; }
  if (web && !HOST.test(hostname)) return null;
  if (port === DEFAULT_PORTS[scheme]) port = '';
  return { scheme, username, password, hostname: hostname.toLowerCase(), port, path, query, fragment };
}

/** The URL written back the way a URL parser serialises it: scheme and host in lower case, `/` for an empty web path. */
function serialize(url: ParsedUrl): string {
  const userInfo = url.username || url.password ? `${url.username}${url.password !== null ? `:${url.password}` : ''}@` : '';
  const authority = url.hostname || userInfo ? `//${userInfo}${url.hostname}${url.port ? `:${url.port}` : ''}` : '';
  const path = url.path === '' && (url.scheme === 'http' || url.scheme === 'https') ? '/' : url.path;
  return `${url.scheme}:${authority}${path}${url.query ? `?${url.query}` : ''}${url.fragment ? `#${url.fragment}` : ''}`;
}

/**
 * The canonical form of a locator: an https repository URL becomes
 * `https://<host>/<owner>/<repo>[/<rest>]` with host, owner and repo in lower case, `www.` of
 * the repository host dropped and a `.git` suffix stripped. Raw file URLs (a `.md` path, a
 * content host, a gist) and URLs with credentials, a query or a fragment are only normalised as
 * URLs; text that is not a URL is kept as given (trimmed).
 */
export function canonicalLocator(value: string): string {
  const trimmed = value.trim();
  const url = parseUrl(trimmed);
  if (!url || (url.scheme !== 'https' && url.scheme !== 'http')) return trimmed;
  const hostname = url.hostname === 'www.github.com' ? 'github.com' : url.hostname;
  const segments = url.path.split('/').filter((segment) => segment !== '');
  const repositoryStyle = url.scheme === 'https'
    && !hostname.endsWith('.githubusercontent.com')
    && hostname !== 'gist.github.com'
    && segments.length >= 2
    && !url.path.endsWith('.md')
    && url.username === '' && url.password === null
    && url.query === '' && url.fragment === '';
  if (!repositoryStyle) return serialize(url);
  const owner = segments[0]!.toLowerCase();
  const repo = segments[1]!.replace(/(\.git)+$/i, '').toLowerCase();
  const rest = segments.slice(2).join('/');
  return `https://${hostname}/${owner}/${repo}${rest ? `/${rest}` : ''}`;
}

const USER_AND_PASSWORD = /:\/\/[^/@\s]+:[^/@\s]+@/;
const SECRET_NAME = /token|secret|password|api[-_]?key|authorization/i;
const SECRET_FRAGMENT_PARAMETER = /(?:^|[?&;])(?:token|secret|password|api[-_]?key|authorization)=/i;

function decodeQueryName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

export const CREDENTIAL_LOCATOR_MESSAGE = 'Source locators must not contain credentials or secret query or fragment parameters';

/**
 * Whether a locator is free of credentials: no user name or password in a URL, and no query or
 * fragment parameter named like a token, secret, password, API key or authorization. Such a
 * locator is never stored (nor echoed back in an error).
 */
export function isCredentialFree(value: string): boolean {
  if (USER_AND_PASSWORD.test(value)) return false;
  const url = parseUrl(value);
  if (!url) return true;
  if (url.username !== '' || (url.password !== null && url.password !== '')) return false;
  if (url.query.split('&').some((pair) => SECRET_NAME.test(decodeQueryName(pair.split('=')[0]!)))) return false;
  return !SECRET_FRAGMENT_PARAMETER.test(url.fragment);
}
