import { networkInterfaces } from 'node:os';
import { isIP } from 'node:net';

/**
 * The names this instance answers to. A web page can rebind its own name to 127.0.0.1 and
 * then reach the port with the browser's credentials (or, in `local_trusted` mode, as the
 * local board): the page's name still travels in `Host` and `Origin`, so a request naming
 * anything else than this instance is refused before it reaches a route.
 *
 * - Loopback names (`localhost`, `127.0.0.1`, `[::1]`) and the bound address are served on
 *   the port Keel listens on only: another local server's pages are other origins.
 * - When the server binds every interface (`0.0.0.0`, `::`), each interface's address is a
 *   bound address too.
 * - The public base URL's host and the names an operator lists (`server.allowedHostnames`)
 *   are served on any port: a reverse proxy in front decides which one the world sees.
 */
export interface ServedHostsOptions {
  bindHost: string;
  port: number;
  publicBaseUrl?: string;
  allowedHostnames?: readonly string[];
}

export const ALLOW_SETTING = 'server.allowedHostnames (env KEEL_ALLOWED_HOSTNAMES)';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]']);

export class ServedHosts {
  /** Names served on the listening port only. */
  private readonly onPort = new Set<string>();
  /** Names served on any port. */
  private readonly anyPort = new Set<string>();
  private readonly port: number;

  constructor(options: ServedHostsOptions) {
    this.port = options.port;
    for (const name of LOOPBACK_NAMES) this.onPort.add(name);
    const bind = normaliseHostname(options.bindHost);
    if (WILDCARD_BINDS.has(bind)) {
      for (const address of interfaceAddresses()) this.onPort.add(address);
    } else {
      this.onPort.add(bind);
    }
    if (options.publicBaseUrl) this.anyPort.add(normaliseHostname(new URL(options.publicBaseUrl).hostname));
    for (const name of options.allowedHostnames ?? []) this.anyPort.add(normaliseHostname(name));
  }

  /** Whether a `Host` header (`name` or `name:port`) names this instance. */
  servesHost(header: string | undefined): boolean {
    if (header === undefined) return false;
    const parsed = parseHostHeader(header);
    if (!parsed) return false;
    if (this.anyPort.has(parsed.hostname)) return true;
    return this.onPort.has(parsed.hostname) && (parsed.port ?? 80) === this.port;
  }

  /** Whether an `Origin` header names a page of this instance. `null` (an opaque origin) never does. */
  servesOrigin(origin: string): boolean {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    const hostname = normaliseHostname(url.hostname);
    if (this.anyPort.has(hostname)) return true;
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    return this.onPort.has(hostname) && port === this.port;
  }
}

/** `name[:port]` or `[v6][:port]`, lower-cased, a trailing dot dropped; undefined when malformed. */
export function parseHostHeader(header: string): { hostname: string; port?: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^[\]:/@\s]+)(?::(\d{1,5}))?$/.exec(header.trim());
  if (!match) return undefined;
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && port > 65535) return undefined;
  return { hostname: normaliseHostname(match[1]!), port };
}

/** Lower case, no trailing dot, IPv6 in brackets and compressed form (as URL writes it). */
export function normaliseHostname(name: string): string {
  let hostname = name.trim().toLowerCase().replace(/\.$/, '');
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) === 6) {
    try {
      hostname = new URL(`http://[${bare}]/`).hostname;
    } catch {
      hostname = `[${bare}]`;
    }
  }
  return hostname;
}

function interfaceAddresses(): string[] {
  const addresses: string[] = [];
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) addresses.push(normaliseHostname(entry.address.replace(/%.*$/, '')));
  }
  return addresses;
}
