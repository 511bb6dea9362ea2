import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { pinnedLookup, type ResolvedAddress } from '../net/http-exchange.ts';

/**
 * The HTTP side of a proxied call towards the provider. Connections are pooled (keep-alive):
 * a model client makes many calls to one provider, and a new TLS handshake per call would
 * be most of the gateway's added latency. Each request still connects only to addresses the
 * target check passed (its own pinned lookup), so a pooled socket was checked when it opened.
 */
const agents = {
  http: new http.Agent({ keepAlive: true, keepAliveMsecs: 15_000, maxSockets: 256, maxFreeSockets: 64, scheduling: 'lifo' }),
  https: new https.Agent({ keepAlive: true, keepAliveMsecs: 15_000, maxSockets: 256, maxFreeSockets: 64, scheduling: 'lifo' }),
};

/** Client headers that reach the provider; everything else (Keel's credentials, cookies, hop-by-hop) stays here. */
const CLIENT_HEADERS = new Set(['content-type', 'accept', 'anthropic-version', 'anthropic-beta', 'openai-beta', 'x-goog-api-client', 'user-agent']);
const CLIENT_HEADER_PREFIXES = ['x-stainless-'];

/** Provider answer headers the client gets: type, retry advice, request ids, rate-limit figures. */
const ANSWER_HEADER = /^(content-type|content-encoding|retry-after|retry-after-ms|request-id|x-should-retry|openai-processing-ms|openai-version|(anthropic|x)-ratelimit-[a-z0-9-]+|anthropic-organization-id|x-goog-[a-z0-9-]+)$/;

export function upstreamHeaders(client: http.IncomingHttpHeaders, extra: Record<string, string>, credential: { header: string; value: string }, bodyBytes: number): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(client)) {
    if (value === undefined) continue;
    if (!CLIENT_HEADERS.has(name) && !CLIENT_HEADER_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  Object.assign(headers, extra);
  // Plain bytes: the meter reads the answer as it passes.
  headers['accept-encoding'] = 'identity';
  headers['content-length'] = String(bodyBytes);
  headers[credential.header] = credential.value;
  return headers;
}

export function answerHeaders(upstream: http.IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(upstream)) {
    if (value === undefined || !ANSWER_HEADER.test(name)) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

export interface UpstreamRequest {
  url: URL;
  addresses: ResolvedAddress[];
  headers: Record<string, string>;
  body: Buffer;
  signal: AbortSignal;
}

/** Sends the request; resolves with the provider's answer once its headers arrive. */
export function sendUpstream(request: UpstreamRequest): Promise<http.IncomingMessage> {
  const { url } = request;
  const secure = url.protocol === 'https:';
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const options: https.RequestOptions = {
    protocol: url.protocol, hostname, port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
    method: 'POST', path: `${url.pathname}${url.search}`, headers: request.headers,
    agent: secure ? agents.https : agents.http, lookup: pinnedLookup(request.addresses), signal: request.signal, maxHeaderSize: 64 * 1024,
  };
  if (secure && isIP(hostname) === 0) options.servername = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(options, resolve);
    req.setNoDelay(true);
    req.on('error', reject);
    req.end(request.body);
  });
}
