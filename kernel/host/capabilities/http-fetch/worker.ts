import { httpFetch as spec } from '../../../../sdk/capabilities/http.ts';
import type { WorkerInit } from '../../protocol/messages.ts';
import type { Invocation } from '../../worker/invocation.ts';
import { addressAllowed, describeClass, METADATA_HOST_NAMES, OVERRIDABLE_CLASSES } from '../../../net/address-policy.ts';
import { headersForOtherOrigin, parseFetchArgs, type FetchRequest } from './fetch-request.ts';
import { exchange, type ResolvedAddress } from '../../../net/http-exchange.ts';
import { systemResolver, type Resolver } from '../../../net/resolver.ts';
import { AllowList, normaliseHost } from '../../../net/allow-list.ts';
import { CapabilityError, type WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.http.fetch`: HTTP(S) to the hosts of the manifest's `network.allow` list and to no
 * other. Names are resolved here and every resolved address is checked (private, loopback,
 * link-local, metadata and other special ranges are refused); the connection then goes to
 * those checked addresses only. Redirects are followed by hand, each hop checked again; a hop
 * to another origin (scheme, host or port) carries neither the plugin's credentials nor its
 * request body (the WHATWG fetch standard drops Authorization there but re-sends a 307's
 * body; a plugin's body is meant for the origin it named, so it stays there). An operator may open non-public addresses for an exactly allow-listed host of one plugin
 * (configuration `plugins.privateNetworkHosts`); metadata addresses stay closed regardless.
 */
export interface FetchPolicy {
  allow: AllowList;
  /** Hosts (normalised) for which the operator allowed non-public addresses. */
  privateHosts: ReadonlySet<string>;
  resolve: Resolver;
  maxResponseBytes: number;
  maxRedirects: number;
  maxConcurrent: number;
}

export interface FetchResult { status: number; headers: Record<string, string>; body: string }

const DEADLINE_MARGIN_MS = 200;
const MAX_TIMEOUT_MS = 120_000;

export function fetchPolicy(init: Pick<WorkerInit, 'network' | 'privateNetworkHosts'>, resolve: Resolver = systemResolver): FetchPolicy {
  const privateHosts = new Set((init.privateNetworkHosts ?? []).map((host) => normaliseHost(host)?.host).filter((host): host is string => !!host));
  return { allow: new AllowList(init.network ?? []), privateHosts, resolve, maxResponseBytes: 5 * 1024 * 1024, maxRedirects: 5, maxConcurrent: 16 };
}

export function httpCapability(init: WorkerInit, resolve: Resolver = systemResolver): WorkerCapability {
  const policy = fetchPolicy(init, resolve);
  let inFlight = 0;
  return {
    fetch: async (invocation: Invocation, args: unknown[]) => {
      const request = parseFetchArgs(args);
      const remaining = invocation.message.deadlineMs - (performance.now() - invocation.startedAt) - DEADLINE_MARGIN_MS;
      if (inFlight >= policy.maxConcurrent) throw new CapabilityError(429, 'fetch_busy', `At most ${policy.maxConcurrent} fetches may run at once`);
      inFlight++;
      try {
        return await performFetch(policy, request, remaining, () => invocation.finished);
      } finally {
        inFlight--;
      }
    },
  };
}

/** Runs one fetch within `budgetMs` (the call deadline, or the plugin's shorter timeoutMs). */
export async function performFetch(policy: FetchPolicy, request: FetchRequest, budgetMs: number, abandoned: () => boolean = () => false): Promise<FetchResult> {
  const timeoutMs = Math.floor(Math.min(request.timeoutMs ?? MAX_TIMEOUT_MS, budgetMs, MAX_TIMEOUT_MS));
  if (timeoutMs <= 0) throw new CapabilityError(504, 'fetch_timeout', 'No time is left before the call deadline');
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let url = request.url;
  let method = request.method;
  let body = request.body;
  let headers = { ...request.headers };
  try {
    for (let hop = 0; ; hop++) {
      if (abandoned()) throw new CapabilityError(409, 'invocation_closed', 'The invocation finished before the fetch did');
      let addresses: ResolvedAddress[];
      try {
        addresses = await checkTarget(policy, url, controller.signal);
      } catch (error) {
        if (hop === 0 || !(error instanceof CapabilityError) || error.code === 'fetch_timeout' || error.code === 'fetch_failed') throw error;
        throw new CapabilityError(403, 'redirect_denied', `Redirect to ${safeUrl(url)} refused: ${error.message}`);
      }
      const headersForHop = { ...headers };
      if (body !== null) headersForHop['content-length'] = String(body.length);
      const result = await exchange({ url, addresses, method, headers: headersForHop, body, signal: controller.signal, maxResponseBytes: policy.maxResponseBytes })
        .catch((error: unknown) => { throw transportError(error, controller.signal, url, timeoutMs); });
      if (result.location === null) {
        return { status: result.status, headers: result.headers, body: result.body ? new TextDecoder('utf-8').decode(result.body) : '' };
      }
      if (hop >= policy.maxRedirects) throw new CapabilityError(502, 'too_many_redirects', `More than ${policy.maxRedirects} redirects`);
      let next: URL;
      try { next = new URL(result.location, url); } catch {
        throw new CapabilityError(403, 'redirect_denied', `Redirect from ${safeUrl(url)} to an invalid location refused`);
      }
      if (result.status === 303 || ((result.status === 301 || result.status === 302) && method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = null;
        delete headers['content-type'];
      }
      if (next.origin !== url.origin) {
        // Credentials meant for one origin are not handed to another, whatever their header is called.
        headers = headersForOtherOrigin(headers);
        // Nor is the body (a 307 or 308 would re-send it): it was written for the origin it was
        // sent to. The request goes on with its method and no body, or the headers that describe one.
        if (body !== null) {
          body = null;
          for (const name of Object.keys(headers)) if (name.startsWith('content-')) delete headers[name];
        }
      }
      url = next;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Scheme, credentials, allow-list, port and every resolved address; returns the addresses to connect to. */
async function checkTarget(policy: FetchPolicy, url: URL, signal: AbortSignal): Promise<ResolvedAddress[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CapabilityError(403, 'network_denied', `Only http and https URLs may be fetched, not ${url.protocol.replace(/:$/, '')}`);
  if (url.username || url.password) throw new CapabilityError(400, 'invalid_url', 'URLs with credentials are not accepted; send an Authorization header instead');
  const normalised = normaliseHost(url.hostname);
  if (!normalised) throw new CapabilityError(400, 'invalid_url', `"${url.hostname}" is not a host name or address`);
  const { host, ip } = normalised;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (METADATA_HOST_NAMES.has(host)) throw new CapabilityError(403, 'address_denied', `${host} is a cloud metadata service, which plugins may never reach`);
  if (policy.allow.matches(host, port).length === 0) {
    const hostListed = policy.allow.entries.some((entry) => (entry.wildcard ? host.endsWith(`.${entry.host}`) : entry.host === host));
    throw new CapabilityError(403, 'network_denied', hostListed
      ? `Port ${port} of ${host} is not in the plugin's network allow-list; list "${host}:${port}" under network.allow in plugin.json`
      : `${host} is not in the plugin's network allow-list; add it under network.allow in plugin.json`);
  }
  const privateAllowed = policy.privateHosts.has(host) && policy.allow.explicitlyAllows(host, port);
  const addresses = ip ? [{ address: host, family: host.includes(':') ? 6 : 4 } as ResolvedAddress] : await resolveWithin(policy, host, signal);
  for (const entry of addresses) {
    const verdict = addressAllowed(entry.address, privateAllowed);
    if (verdict.allowed) continue;
    const what = ip ? `${host} is ${describeClass(verdict.cls)}` : `${host} resolves to ${describeClass(verdict.cls)}`;
    const fix = OVERRIDABLE_CLASSES.has(verdict.cls) ? '; an operator can allow it for this exact host (configuration plugins.privateNetworkHosts)' : '';
    throw new CapabilityError(403, 'address_denied', `${what}, which plugins may not reach${fix}`);
  }
  return addresses;
}

async function resolveWithin(policy: FetchPolicy, host: string, signal: AbortSignal): Promise<ResolvedAddress[]> {
  let addresses: ResolvedAddress[];
  try {
    addresses = await new Promise<ResolvedAddress[]>((resolve, reject) => {
      const onAbort = () => reject(new CapabilityError(504, 'fetch_timeout', `Resolving ${host} took too long`));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      policy.resolve(host).then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  } catch (error) {
    if (error instanceof CapabilityError) throw error;
    throw new CapabilityError(502, 'fetch_failed', `${host} could not be resolved`);
  }
  if (addresses.length === 0) throw new CapabilityError(502, 'fetch_failed', `${host} could not be resolved`);
  return addresses;
}

const TRANSPORT_MESSAGES: Record<string, string> = {
  ECONNREFUSED: 'the connection was refused', ECONNRESET: 'the connection was reset', EPIPE: 'the connection was closed',
  ETIMEDOUT: 'the connection timed out', EHOSTUNREACH: 'the host is unreachable', ENETUNREACH: 'the network is unreachable',
  HPE_HEADER_OVERFLOW: 'the response headers are too large', ERR_TLS_CERT_ALTNAME_INVALID: 'the TLS certificate does not match the host',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the TLS certificate is self-signed', SELF_SIGNED_CERT_IN_CHAIN: 'the TLS certificate chain is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the TLS certificate cannot be verified', CERT_HAS_EXPIRED: 'the TLS certificate has expired',
};

/** Transport failures as the plugin may see them: a code and a short reason, never host internals. */
function transportError(error: unknown, signal: AbortSignal, url: URL, timeoutMs: number): CapabilityError {
  if (error instanceof CapabilityError) return error;
  if (signal.aborted) return new CapabilityError(504, 'fetch_timeout', `${safeUrl(url)} did not answer within ${timeoutMs} ms`);
  const code = String((error as { code?: unknown })?.code ?? '');
  return new CapabilityError(502, 'fetch_failed', `Fetching ${safeUrl(url)} failed: ${TRANSPORT_MESSAGES[code] ?? 'the request failed'}`);
}

/** The URL without query or fragment, for messages. */
function safeUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname.length > 200 ? `${url.pathname.slice(0, 200)}…` : url.pathname}`;
}

export const workerSide = workerUnit(spec, ({ init }) => ({ http: httpCapability(init) }));
