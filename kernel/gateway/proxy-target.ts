import type { KeelConfig } from '../config/schema.ts';
import { KeelError } from '../http/errors.ts';
import { checkHttpTarget } from '../executions/http-runner.ts';
import { normaliseHost, parseAllowEntry } from '../net/allow-list.ts';
import { systemResolver, type Resolver } from '../net/resolver.ts';
import type { ResolvedAddress } from '../net/http-exchange.ts';

/**
 * Where a proxy answer may send a request (and the company's key with it): https to a public
 * address, or http/https to a host the operator lists in `llm.privateNetworkHosts` (`host` or
 * `host:port`; listed hosts may be private or loopback, never metadata). No credentials or
 * fragment in the URL. The address rules are the executor's (checkHttpTarget), applied after DNS.
 * `ctx.http.checkProxyTarget` applies the same rule to a provider's base URL, which also may not
 * carry a query (the gateway appends the provider's own path and query to it).
 */
export async function checkProxyUrl(raw: string, config: KeelConfig, options: { allowQuery: boolean; resolve?: Resolver }): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  let url: URL;
  try { url = new URL(raw); } catch { throw denied('is not an absolute URL'); }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw denied(`uses ${url.protocol.replace(/:$/, '')}; only https (or http to a listed host) is forwarded`);
  if (url.username || url.password) throw denied('carries credentials');
  if (url.hash || raw.includes('#')) throw denied('carries a fragment');
  if (!options.allowQuery && (url.search || raw.includes('?'))) throw denied('carries a query');
  const host = normaliseHost(url.hostname);
  if (!host) throw denied(`names no usable host (${url.hostname})`);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const listed = isListed(config, host.host, port);
  if (url.protocol === 'http:' && !listed) throw denied(`uses http to ${host.host}, which is not listed in llm.privateNetworkHosts; use https`);
  try {
    const addresses = await checkHttpTarget(url, listed ? [host.host] : [], options.resolve ?? cachedResolver);
    return { url, addresses };
  } catch (error) {
    if (!(error instanceof KeelError)) throw error;
    // The executor's wording names the executor's setting; this rule has its own.
    const reason = error.code === 'address_denied' ? `${error.message.replace(/, which executions may (never|not) reach.*$/, '')}, which is refused unless listed in llm.privateNetworkHosts (metadata addresses never)` : error.message;
    throw denied(reason.replace(/^(.)/, (c) => c.toLowerCase()), error.code);
  }
}

/** How long a provider's resolved (and checked) addresses are reused: a DNS lookup per call would sit on the first-byte path. */
const RESOLVED_MS = 30_000;
const resolved = new Map<string, { addresses: ResolvedAddress[]; until: number }>();

/** The system resolver, remembered briefly per host name. A request still connects only to checked addresses (its pinned lookup). */
export const cachedResolver: Resolver = async (host) => {
  const known = resolved.get(host);
  if (known && known.until > Date.now()) return known.addresses;
  const addresses = await systemResolver(host);
  if (resolved.size >= 256) resolved.delete(resolved.keys().next().value!);
  resolved.set(host, { addresses, until: Date.now() + RESOLVED_MS });
  return addresses;
};

function isListed(config: KeelConfig, host: string, port: number): boolean {
  return (config.llm?.privateNetworkHosts ?? []).some((raw) => {
    const entry = parseAllowEntry(raw);
    return entry !== null && !entry.wildcard && entry.host === host && (entry.port === null || entry.port === port);
  });
}

function denied(reason: string, rule = 'proxy_target'): KeelError {
  return new KeelError(502, 'proxy_target_denied', `The proxy target ${reason}`, { details: { reason: rule }, expose: true });
}

/** The plugin-facing verdict (ctx.http.checkProxyTarget): never throws for a refused address. */
export async function proxyTargetVerdict(raw: string, config: KeelConfig, resolve?: Resolver): Promise<{ ok: boolean; reason: string | null }> {
  try {
    await checkProxyUrl(raw, config, { allowQuery: false, resolve });
    return { ok: true, reason: null };
  } catch (error) {
    if (error instanceof KeelError && error.code === 'proxy_target_denied') return { ok: false, reason: error.message.replace(/^The proxy target /, '') };
    throw error;
  }
}
