/**
 * Reads a `DATABASE_URL` the way libpq does for the parts Keel honours: one host or a list of
 * them (`postgres://user:pass@h1:5432,h2:5433/keel?target_session_attrs=read-write`, what
 * `pg_autoctl show uri` prints) and the kind of server a session must reach. node-postgres
 * takes one host only, so the list is walked by connections.ts; everything else in the URL
 * (user, password, database, sslmode, options) is passed on to the driver for each host.
 */

/** One server of the list. */
export interface DatabaseEndpoint { host: string; port: number }

/**
 * libpq's target_session_attrs: which server a connection may keep. `read-write` (a primary
 * that accepts writes) is what Keel needs; `any` takes the first server that answers.
 */
export const SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby'] as const;
export type SessionAttrs = typeof SESSION_ATTRS[number];

export interface DatabaseAddress {
  endpoints: DatabaseEndpoint[];
  sessionAttrs: SessionAttrs;
  /** Whether connections must walk the list (more than one host, or a session kind to check). */
  walks: boolean;
  /** A single-host URL for `endpoint`, with the rest of the URL unchanged (target_session_attrs removed). */
  urlFor(endpoint: DatabaseEndpoint): string;
}

export class DatabaseUrlError extends Error {}

const URL_PARTS = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)(\/[^?#]*)?(\?[^#]*)?$/i;
const DEFAULT_PORT = 5432;

export function parseDatabaseUrl(url: string): DatabaseAddress {
  const parts = URL_PARTS.exec(url.trim());
  if (!parts) throw new DatabaseUrlError('the database URL must look like postgres://user:password@host:port[,host:port...]/database');
  const [, scheme, userinfo, hostList, path = '', query = ''] = parts as unknown as [string, string, string | undefined, string, string | undefined, string | undefined];
  const rawHosts = hostList.split(',');
  const endpoints = rawHosts.map(parseHost);
  const params = new URLSearchParams(query.replace(/^\?/, ''));
  const requested = params.get('target_session_attrs') ?? 'any';
  if (!(SESSION_ATTRS as readonly string[]).includes(requested)) {
    throw new DatabaseUrlError(`target_session_attrs=${requested} is not supported; use one of ${SESSION_ATTRS.join(', ')}`);
  }
  params.delete('target_session_attrs');
  const rest = params.toString();
  const prefix = `${scheme}${userinfo === undefined ? '' : `${userinfo}@`}`;
  const suffix = `${path}${rest ? `?${rest}` : ''}`;
  return {
    endpoints,
    sessionAttrs: requested as SessionAttrs,
    walks: endpoints.length > 1 || requested !== 'any',
    urlFor: (endpoint) => `${prefix}${formatHost(endpoint)}${suffix}`,
  };
}

/**
 * The same address with other credentials (a plugin's login role): the host list and the
 * parameters stay as they are. WHATWG URL cannot hold a host list, hence this.
 */
export function withCredentials(url: string, user: string, password: string): string {
  const parts = URL_PARTS.exec(url.trim());
  if (!parts) throw new DatabaseUrlError('the database URL must look like postgres://user:password@host:port[,host:port...]/database');
  const [, scheme, , hostList, path = '', query = ''] = parts as unknown as [string, string, string | undefined, string, string | undefined, string | undefined];
  return `${scheme}${encodeURIComponent(user)}:${encodeURIComponent(password)}@${hostList}${path}${query}`;
}

/** The address without credentials, for logs and messages. */
export function describeEndpoints(address: DatabaseAddress): string {
  return address.endpoints.map(formatHost).join(',');
}

function parseHost(raw: string): DatabaseEndpoint {
  if (raw === '') throw new DatabaseUrlError('the database URL names an empty host');
  // [::1]:5432 (an IPv6 address in brackets), host:5432 or host; a host may be percent-encoded (a socket directory).
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d*))?$/.exec(raw);
  if (!match) throw new DatabaseUrlError(`the database URL names an invalid host "${raw}"`);
  const host = decodeURIComponent(match[1]!.replace(/^\[|\]$/g, ''));
  const port = match[2] ? Number(match[2]) : DEFAULT_PORT;
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new DatabaseUrlError(`the database URL names an invalid port in "${raw}"`);
  return { host, port };
}

function formatHost(endpoint: DatabaseEndpoint): string {
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host.startsWith('/') ? encodeURIComponent(endpoint.host) : endpoint.host;
  return `${host}:${endpoint.port}`;
}
