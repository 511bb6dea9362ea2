import { domainToASCII } from 'node:url';
import { canonicalIp, parseIPv4 } from './address-policy.ts';

/**
 * The manifest's `network.allow` list: host names, `*.domain` wildcards (any depth of
 * subdomain, never the domain itself) and an optional `:port`. Without a port an entry
 * allows 80 and 443 only. Names compare case-insensitively, without a trailing dot, in
 * their ASCII (punycode) form; numeric hosts compare by address, whatever their spelling.
 */
export interface AllowEntry {
  host: string;
  wildcard: boolean;
  /** The host is an address literal (canonical text); wildcards never match addresses. */
  ip: boolean;
  port: number | null;
}

export const DEFAULT_PORTS: ReadonlySet<number> = new Set([80, 443]);

/** A host as written in a URL or an entry -> canonical text, or null when it is not a usable host. */
export function normaliseHost(raw: string): { host: string; ip: boolean } | null {
  let text = raw.trim().toLowerCase();
  if (text.startsWith('[') && text.endsWith(']')) {
    const ip = canonicalIp(text);
    return ip && ip.includes(':') ? { host: ip, ip: true } : null;
  }
  if (text.endsWith('.')) text = text.slice(0, -1);
  if (text === '' || text.includes('..')) return null;
  if (text.includes(':')) {
    const ip = canonicalIp(text);
    return ip ? { host: ip, ip: true } : null;
  }
  if (parseIPv4(text)) return { host: canonicalIp(text)!, ip: true };
  const ascii = domainToASCII(text);
  if (!ascii || !/^[a-z0-9.-]+$/.test(ascii) || ascii.length > 253) return null;
  // A name whose last label is numeric is an address to a URL parser, not a name.
  const labels = ascii.split('.');
  if (/^(0x[0-9a-f]*|[0-9]+)$/.test(labels[labels.length - 1]!)) return null;
  return { host: ascii, ip: false };
}

export function parseAllowEntry(raw: string): AllowEntry | null {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 300) return null;
  let text = raw.trim().toLowerCase();
  const wildcard = text.startsWith('*.');
  if (wildcard) text = text.slice(2);
  let port: number | null = null;
  const bracketed = /^(\[[^\]]+\])(?::([0-9]{1,5}))?$/.exec(text);
  let hostText = text;
  if (bracketed) {
    hostText = bracketed[1]!;
    port = bracketed[2] === undefined ? null : Number(bracketed[2]);
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const colon = text.lastIndexOf(':');
    if (!/^[0-9]{1,5}$/.test(text.slice(colon + 1))) return null;
    hostText = text.slice(0, colon);
    port = Number(text.slice(colon + 1));
  }
  if (port !== null && (port < 1 || port > 65535)) return null;
  const host = normaliseHost(hostText);
  if (!host || (wildcard && host.ip)) return null;
  return { host: host.host, wildcard, ip: host.ip, port };
}

export class AllowList {
  readonly entries: AllowEntry[];

  constructor(raw: readonly string[]) {
    this.entries = raw.map(parseAllowEntry).filter((entry): entry is AllowEntry => entry !== null);
  }

  /** The entries that allow this host and port; exact-name entries first. */
  matches(host: string, port: number): AllowEntry[] {
    return this.entries
      .filter((entry) => (entry.port === null ? DEFAULT_PORTS.has(port) : entry.port === port))
      .filter((entry) => (entry.wildcard ? !entry.ip && host.endsWith(`.${entry.host}`) : entry.host === host))
      .sort((a, b) => Number(a.wildcard) - Number(b.wildcard));
  }

  /** Whether the host is named exactly (not through a wildcard) for this port. */
  explicitlyAllows(host: string, port: number): boolean {
    return this.matches(host, port).some((entry) => !entry.wildcard);
  }
}
