import { defineCapability, method, present } from './define.ts';

/** A fetched response: header names lower-cased, the body as text (at most 5 MiB). */
export interface FetchResponse { status: number; headers: Record<string, string>; body: string; json<T = unknown>(): T }
export interface HttpCapability {
  /**
   * Only hosts (and ports) of the manifest's network allow-list; private, loopback and metadata
   * addresses are refused after DNS resolution, and every redirect hop is checked again.
   * Errors: `network_denied`, `address_denied`, `redirect_denied`, `fetch_timeout`, ...
   */
  fetch(url: string, init?: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number }): Promise<FetchResponse>;
}

export const httpFetch = defineCapability<{ http: HttpCapability }>()({
  id: 'http.fetch',
  summary: "Make HTTP requests to the hosts of the manifest's network allow-list",
  members: {
    http: {
      fetch: method('worker', [{ type: 'string', maxLength: 8192 }, { type: 'object' }], { type: 'object', required: ['status', 'headers', 'body'], properties: { status: { type: 'integer' }, headers: { type: 'object' }, body: { type: 'string' } } }, { required: 1, scope: 'instance' }),
    },
  },
  requiredBy: (manifest) => present(manifest, 'network'),
});

export const httpRoutes = defineCapability()({
  id: 'http.routes',
  summary: 'Serve HTTP routes under /api/plugins/{key}',
  members: {},
  requiredBy: (manifest) => present(manifest, 'routes'),
});

/** An absolute path outside /api/ is a public root route (a website's pages), not an API route. */
export const isRootPath = (path: string): boolean => !path.toLowerCase().startsWith('/api/');

export const httpRoutesAbsolute = defineCapability()({
  id: 'http.routes.absolute',
  summary: 'Serve HTTP routes at absolute paths under /api/ (outside /api/plugins/)',
  members: {},
  requiredBy: (manifest) => (manifest.routes ?? []).flatMap((route, index) => (route.absolute && !isRootPath(route.path) ? [`routes.${index}.absolute`] : [])),
});

/**
 * Root paths (`/llms.txt`, `/product/...`) are the instance's public face, outside the API:
 * only unauthenticated (`auth: 'none'`) routes, never under /api, and only once the operator
 * grants this capability (first-party plugins are granted what they declare at bootstrap).
 */
export const httpRoutesPublic = defineCapability()({
  id: 'http.routes.public',
  summary: 'Serve public, unauthenticated routes at root paths outside /api/ (a website: /llms.txt, /product/...)',
  members: {},
  requiredBy: (manifest) => (manifest.routes ?? []).flatMap((route, index) => (route.absolute && isRootPath(route.path) ? [`routes.${index}.absolute`] : [])),
});

/** The verdict on a model provider address (`reason` says why it is refused; null when ok). */
export interface ProxyTargetVerdict { ok: boolean; reason: string | null }
export interface HttpProxyCapability {
  /**
   * Whether the kernel would forward a proxy answer to `url`: https (or http/https to a host the
   * operator lists in llm.privateNetworkHosts), no credentials, query or fragment in the URL, and
   * no private, loopback, link-local or metadata address unless listed (checked after DNS for a
   * name). For validating a provider's base URL when it is written.
   */
  checkProxyTarget(url: string): Promise<ProxyTargetVerdict>;
}

export const httpProxy = defineCapability<{ http: HttpProxyCapability }>()({
  id: 'http.proxy',
  summary: "Have the kernel forward route requests to model providers with the company's vault keys, streamed and metered (respondProxy)",
  members: {
    http: {
      checkProxyTarget: method('kernel', [{ type: 'string', maxLength: 8192 }], { type: 'object', required: ['ok', 'reason'], properties: { ok: { type: 'boolean' }, reason: { type: ['string', 'null'] } } }, { scope: 'instance' }),
    },
  },
  requiredBy: (manifest) => (manifest.routes ?? []).flatMap((route, index) => (route.proxy ? [`routes.${index}.proxy`] : [])),
});
