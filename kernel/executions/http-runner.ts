import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { KeelError } from '../http/errors.ts';
import { addressAllowed, describeClass, METADATA_HOST_NAMES, OVERRIDABLE_CLASSES } from '../net/address-policy.ts';
import { systemResolver, type Resolver } from '../net/resolver.ts';
import { pinnedLookup, type ResolvedAddress } from '../net/http-exchange.ts';
import { normaliseHost } from '../net/allow-list.ts';
import type { ExecutionLog } from './execution-log.ts';
import { SseParser } from '../http/sse-parser.ts';

/**
 * The `http` kind: one request to the agent's configured URL, with a deadline, its answer read
 * whole (JSON) or as Server-Sent Events. The address rules are those of ctx.http.fetch
 * (kernel/net/address-policy.ts): the name is resolved here, every address checked
 * (private, loopback, link-local, metadata refused; the operator may open non-public addresses
 * for one host of one plugin with `plugins.privateNetworkHosts`, never metadata), and the
 * connection goes only to the checked addresses. Redirects are not followed.
 */
export const MAX_RESPONSE_BYTES = 5 * 1024 * 1024;

/** The target `url` may be the configured URL or a path under it, on the same origin. */
export function assertUnderConfiguredUrl(target: string, configured: unknown): URL {
  if (typeof configured !== 'string' || configured.length === 0) {
    throw new KeelError(409, 'adapter_config_invalid', "The agent's adapterConfig has no url to send the execution to");
  }
  let url: URL;
  let base: URL;
  try { url = new URL(target); base = new URL(configured); } catch {
    throw new KeelError(400, 'invalid_url', 'url must be an absolute http or https URL');
  }
  const basePath = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  const under = url.origin === base.origin && (url.pathname === base.pathname || url.pathname.startsWith(basePath)) && !url.username && !url.password;
  if (!under) throw new KeelError(403, 'execution_url_denied', "url must be the agent's configured adapterConfig.url or a path under it");
  return url;
}

/** Scheme, host and every resolved address; answers the addresses the request may connect to. */
export async function checkHttpTarget(url: URL, privateHosts: readonly string[], resolve: Resolver = systemResolver): Promise<ResolvedAddress[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new KeelError(403, 'network_denied', `Only http and https URLs may be used, not ${url.protocol.replace(/:$/, '')}`);
  const normalised = normaliseHost(url.hostname);
  if (!normalised) throw new KeelError(400, 'invalid_url', `"${url.hostname}" is not a host name or address`);
  const { host, ip } = normalised;
  if (METADATA_HOST_NAMES.has(host)) throw new KeelError(403, 'address_denied', `${host} is a cloud metadata service, which executions may never reach`);
  const privateAllowed = privateHosts.some((entry) => normaliseHost(entry)?.host === host);
  let addresses: ResolvedAddress[];
  if (ip) addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  else {
    try { addresses = await resolve(host); } catch { throw new KeelError(422, 'address_unresolvable', `${host} could not be resolved`); }
    if (addresses.length === 0) throw new KeelError(422, 'address_unresolvable', `${host} could not be resolved`);
  }
  for (const entry of addresses) {
    const verdict = addressAllowed(entry.address, privateAllowed);
    if (verdict.allowed) continue;
    const fix = OVERRIDABLE_CLASSES.has(verdict.cls) ? '; an operator can allow it for this host (configuration plugins.privateNetworkHosts, "<pluginKey>@<host>")' : '';
    throw new KeelError(403, 'address_denied', `${host} ${ip ? 'is' : 'resolves to'} ${describeClass(verdict.cls)}, which executions may not reach${fix}`);
  }
  return addresses;
}

export interface HttpSpec {
  url: URL;
  addresses: ResolvedAddress[];
  method: string;
  headers: Record<string, string>;
  body: Buffer | null;
  sse: boolean;
  signal: AbortSignal;
}

export interface HttpOutcome { status: number; response: unknown }

export function runHttp(spec: HttpSpec, log: ExecutionLog): Promise<HttpOutcome> {
  const { url } = spec;
  const secure = url.protocol === 'https:';
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const options: https.RequestOptions = {
    protocol: url.protocol, hostname, port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
    method: spec.method, path: `${url.pathname}${url.search}`,
    headers: { ...spec.headers, ...(spec.body ? { 'content-length': String(spec.body.length) } : {}) },
    agent: false, lookup: pinnedLookup(spec.addresses), signal: spec.signal, maxHeaderSize: 64 * 1024,
  };
  if (secure && isIP(hostname) === 0) options.servername = hostname;
  return new Promise<HttpOutcome>((resolve, reject) => {
    const req = (secure ? https : http).request(options, (res) => {
      const status = res.statusCode ?? 0;
      log.line('system', `HTTP ${status}`);
      res.setEncoding('utf8');
      if (spec.sse && String(res.headers['content-type'] ?? '').includes('text/event-stream')) {
        const parser = new SseParser((event, data) => log.sse(event, data));
        res.on('data', (chunk: string) => parser.push(chunk));
        res.on('end', () => { parser.end(); resolve({ status, response: null }); });
      } else {
        let text = '';
        res.on('data', (chunk: string) => {
          text += chunk;
          if (text.length > MAX_RESPONSE_BYTES) res.destroy(new KeelError(502, 'response_too_large', `The answer exceeds ${MAX_RESPONSE_BYTES} bytes`));
        });
        res.on('end', () => {
          for (const line of text.split('\n')) if (line.length > 0) log.line('stdout', line);
          let response: unknown = null;
          try { response = text.length > 0 ? JSON.parse(text) : null; } catch { /* not JSON: the log has it */ }
          resolve({ status, response: spec.sse ? null : response });
        });
      }
      res.on('error', reject);
      res.on('aborted', () => reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
    });
    req.on('error', reject);
    req.end(spec.body ?? undefined);
  });
}

