import { CapabilityFault } from './errors.ts';

export interface FakeRequest { url: string; method: string; headers: Record<string, string>; body: string | null }
/** A canned answer; an object or array body is sent as JSON. */
export interface FakeResponse { status?: number; headers?: Record<string, string>; body?: unknown }
export type FakeResponder = FakeResponse | ((request: FakeRequest) => FakeResponse | Promise<FakeResponse>);

/** Whether `host` (with its port, when not the scheme's default) is on a manifest allow-list entry. */
export function hostAllowed(url: URL, allow: readonly string[]): boolean {
  const name = url.hostname.toLowerCase();
  return allow.some((entry) => {
    const [pattern, port] = entry.toLowerCase().split(':') as [string, string | undefined];
    if (port !== undefined ? url.port !== port : url.port !== '') return false;
    return pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) : name === pattern;
  });
}

/**
 * `ctx.http.fetch` without a network. `host.http.route('https://api.example.com/v1/x', { body: {...} })`
 * or a RegExp and a function of the request. The manifest's `network.allow` is enforced as
 * the real host enforces it (only http and https, only listed hosts); a request no route
 * answers fails with `fake_route_missing`. Every request that passed the allow-list is kept in
 * `requests`.
 */
export class FakeHttp {
  readonly requests: FakeRequest[] = [];
  private routes: Array<{ url: string | RegExp; method: string | null; responder: FakeResponder }> = [];
  private readonly allow: readonly string[];

  constructor(allow: readonly string[]) {
    this.allow = allow;
  }

  /** Answers requests to `url` (exact, or a RegExp over the full URL); `method` narrows it. Later routes win. */
  route(url: string | RegExp, responder: FakeResponder, options: { method?: string } = {}): this {
    this.routes.unshift({ url, method: options.method?.toUpperCase() ?? null, responder });
    return this;
  }

  reset(): void {
    this.routes = [];
    this.requests.length = 0;
  }

  /**
   * ctx.http.checkProxyTarget without DNS: https (or http to 127.0.0.1 or localhost, which the
   * tests' local providers use; a real instance needs them in llm.privateNetworkHosts), no
   * credentials, query or fragment. The host's rule also refuses private addresses after DNS.
   */
  async checkProxyTarget(rawUrl: unknown): Promise<{ ok: boolean; reason: string | null }> {
    let url: URL;
    try { url = new URL(String(rawUrl)); } catch { return { ok: false, reason: 'is not an absolute URL' }; }
    const local = url.hostname === '127.0.0.1' || url.hostname === 'localhost';
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) return { ok: false, reason: `uses ${url.protocol.replace(/:$/, '')}; only https (or http to a listed host) is forwarded` };
    if (url.username || url.password) return { ok: false, reason: 'carries credentials' };
    if (url.search || url.hash || String(rawUrl).includes('?') || String(rawUrl).includes('#')) return { ok: false, reason: 'carries a query or fragment' };
    return { ok: true, reason: null };
  }

  async fetch(rawUrl: unknown, rawInit: unknown): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    let url: URL;
    try { url = new URL(String(rawUrl)); } catch { throw new CapabilityFault(400, 'invalid_url', `"${String(rawUrl)}" is not an absolute URL`); }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CapabilityFault(400, 'invalid_url', `Only http and https URLs can be fetched, not ${url.protocol}`);
    if (!hostAllowed(url, this.allow)) {
      throw new CapabilityFault(403, 'network_denied', `${url.host} is not on the plugin's network allow-list; add it under network.allow in plugin.json`);
    }
    const init = (rawInit ?? {}) as { method?: string; headers?: Record<string, string>; body?: string };
    const request: FakeRequest = {
      url: url.href,
      method: (init.method ?? 'GET').toUpperCase(),
      headers: Object.fromEntries(Object.entries(init.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)])),
      body: init.body === undefined ? null : String(init.body),
    };
    this.requests.push(request);
    const match = this.routes.find((r) => (r.method === null || r.method === request.method)
      && (typeof r.url === 'string' ? r.url === request.url || r.url === String(rawUrl) : r.url.test(request.url)));
    if (!match) throw new CapabilityFault(502, 'fake_route_missing', `No test route answers ${request.method} ${request.url}; add host.http.route(url, response)`);
    const answer = typeof match.responder === 'function' ? await match.responder(request) : match.responder;
    const headers = Object.fromEntries(Object.entries(answer.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
    let body = '';
    if (typeof answer.body === 'string') body = answer.body;
    else if (answer.body !== undefined) {
      body = JSON.stringify(answer.body);
      headers['content-type'] ??= 'application/json';
    }
    return { status: answer.status ?? 200, headers, body };
  }
}
