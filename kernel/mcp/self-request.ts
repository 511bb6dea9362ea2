/**
 * Calls a route of this very Keel process over HTTP, as the caller: the core MCP tools and the
 * public endpoint's connector pages go through the kernel's own request path (authentication,
 * company scoping, validation, the plugins' route dispatch, activity) rather than a second
 * copy of any handler. Only the caller's credential headers are forwarded.
 */
export interface SelfAnswer { status: number; contentType: string; text: string }

const FORWARDED = ['authorization', 'x-service-run-id', 'idempotency-key'];

export class SelfRequest {
  private base: string | undefined;

  /** The kernel's listening URL; a wildcard address is reached through loopback. */
  setUrl(url: string): void {
    this.base = url.replace('://0.0.0.0:', '://127.0.0.1:').replace('://[::]:', '://[::1]:');
  }

  async call(method: string, path: string, options: { headers?: Record<string, string | undefined>; body?: unknown } = {}): Promise<SelfAnswer> {
    if (!this.base) throw new Error('The kernel is not listening yet');
    const headers: Record<string, string> = { accept: 'application/json, text/markdown, text/plain' };
    for (const name of FORWARDED) {
      const value = options.headers?.[name];
      if (value) headers[name] = value;
    }
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const response = await fetch(`${this.base}${path}`, { method, headers, body });
    return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() };
  }
}
