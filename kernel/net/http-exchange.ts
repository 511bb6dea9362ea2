import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import zlib from 'node:zlib';
import { CapabilityError } from '../../sdk/shared/capability-error.ts';

/**
 * One HTTP exchange to an address that the caller has already checked. The connection
 * goes only to those addresses: the request carries its own `lookup`, so a resolver asked
 * again (DNS rebinding) is never consulted. The response body is read up to a byte limit,
 * after decompression, and the socket is destroyed the moment the limit is passed.
 */
export interface ResolvedAddress { address: string; family: 4 | 6 }

export interface Exchange {
  url: URL;
  /** The checked addresses of url's host (one entry, the host itself, for address literals). */
  addresses: ResolvedAddress[];
  method: string;
  headers: Record<string, string>;
  body: Buffer | null;
  signal: AbortSignal;
  maxResponseBytes: number;
}

export interface ExchangeResult { status: number; headers: Record<string, string>; location: string | null; body: Buffer | null }

export function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return ((_hostname: string, options: { family?: number | string; all?: boolean }, callback: (...args: unknown[]) => void) => {
    const family = options?.family === 'IPv4' ? 4 : options?.family === 'IPv6' ? 6 : Number(options?.family ?? 0);
    const usable = family === 4 || family === 6 ? addresses.filter((entry) => entry.family === family) : addresses;
    if (usable.length === 0) {
      callback(Object.assign(new Error('no checked address of this family'), { code: 'ENOTFOUND' }));
    } else if (options?.all) {
      callback(null, usable.map((entry) => ({ address: entry.address, family: entry.family })));
    } else {
      callback(null, usable[0]!.address, usable[0]!.family);
    }
  }) as unknown as LookupFunction;
}

function responseHeaders(raw: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export function exchange(request: Exchange): Promise<ExchangeResult> {
  const { url } = request;
  const secure = url.protocol === 'https:';
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const options: https.RequestOptions = {
    protocol: url.protocol,
    hostname,
    port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
    method: request.method,
    path: `${url.pathname}${url.search}`,
    headers: request.headers,
    agent: false,
    lookup: pinnedLookup(request.addresses),
    signal: request.signal,
    maxHeaderSize: 64 * 1024,
  };
  if (secure && isIP(hostname) === 0) options.servername = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return new Promise<ExchangeResult>((resolve, reject) => {
    const req = (secure ? https : http).request(options, (res) => {
      const status = res.statusCode ?? 0;
      const headers = responseHeaders(res.headers);
      const location = REDIRECTS.has(status) && typeof res.headers.location === 'string' ? res.headers.location : null;
      if (location !== null || request.method === 'HEAD') {
        res.destroy();
        resolve({ status, headers, location, body: null });
        return;
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > request.maxResponseBytes) {
        res.destroy();
        reject(tooLarge(request.maxResponseBytes));
        return;
      }
      const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
      const decoder = encoding === 'gzip' || encoding === 'x-gzip' ? zlib.createGunzip()
        : encoding === 'deflate' ? zlib.createInflate()
          : encoding === 'br' ? zlib.createBrotliDecompress() : null;
      const stream: NodeJS.ReadableStream = decoder ? res.pipe(decoder) : res;
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const fail = (error: unknown) => {
        if (settled) return;
        settled = true;
        res.destroy();
        decoder?.destroy();
        reject(error);
      };
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        // Counted after decompression, so a small compressed bomb is stopped as early as a large body.
        if (size > request.maxResponseBytes) fail(tooLarge(request.maxResponseBytes));
        else chunks.push(chunk);
      });
      stream.on('error', (error) => fail(decoder ? new CapabilityError(502, 'fetch_failed', 'The response body could not be decoded') : error));
      res.on('aborted', () => fail(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
      stream.on('end', () => {
        if (settled) return;
        settled = true;
        resolve({ status, headers, location: null, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end(request.body ?? undefined);
  });
}

function tooLarge(limit: number): CapabilityError {
  return new CapabilityError(502, 'response_too_large', `The response body exceeds ${limit} bytes`);
}
