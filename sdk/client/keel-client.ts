import type { ExamplePlugin, InstallSource, PluginHealth, PluginLogs, PluginRecord, PluginTool, UiContributions } from './types.ts';

/** Extra parts of one request. */
export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined | null>;
  headers?: Record<string, string>;
  /** Sees the answer's headers (a paging cursor, for example) before the body is returned. */
  onHeaders?: (headers: Headers) => void;
}

/** `path?a=1&b=x`, leaving out values that are undefined or null. */
export function withQuery(path: string, query: RequestOptions['query']): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null) params.set(name, String(value));
  const text = params.toString();
  return text ? `${path}${path.includes('?') ? '&' : '?'}${text}` : path;
}

export interface ClientOptions {
  /** Where the kernel listens, e.g. `http://127.0.0.1:3100`. */
  baseUrl: string;
  /** A board API key or agent token, sent as `Authorization: Bearer …`; none in local_trusted mode. */
  token?: string;
  /** Per-request time limit (default 60 s: an upgrade rebuilds and restarts the plugin). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * An error answer. Keel's own is `{error, code, details?, issues?}`. A model gateway route may
 * pass on a model provider's answer (`{error: {message, ...}}` or `{type: "error", error: {...}}`):
 * then `fromKeel` is false, `code` is `http_<status>`, the message is the provider's, and `body`
 * holds the answer as it came.
 */
export class KeelApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  readonly issues?: Array<{ path: string; message: string }>;
  /** The parsed answer (null when it was not JSON). */
  readonly body: unknown;
  /** Whether the answer is Keel's own error body (a string `error`), not one passed on from elsewhere. */
  readonly fromKeel: boolean;
  constructor(status: number, body: { error?: unknown; code?: string; details?: unknown; issues?: Array<{ path: string; message: string }> } | null, fallback: string) {
    const fromKeel = typeof body?.error === 'string';
    const passedOn = !fromKeel && body?.error && typeof body.error === 'object' ? (body.error as { message?: unknown }).message : undefined;
    super(fromKeel ? body!.error as string : typeof passedOn === 'string' && passedOn ? passedOn : fallback);
    this.name = 'KeelApiError';
    this.status = status;
    this.code = typeof body?.code === 'string' ? body.code : `http_${status}`;
    this.details = body?.details;
    this.issues = body?.issues;
    this.body = body;
    this.fromKeel = fromKeel;
  }
}

/** The kernel could not be reached at all (not running, wrong address, timeout). */
export class KeelConnectionError extends Error {
  readonly baseUrl: string;
  /** Why the connection failed: an errno code such as ECONNREFUSED, or `timed out`. */
  readonly reason: string;
  constructor(baseUrl: string, cause: unknown) {
    const inner = (cause as { cause?: { code?: string; message?: string } })?.cause;
    const reason = (cause as Error)?.name === 'TimeoutError' ? 'timed out' : inner?.code ?? inner?.message ?? (cause as Error)?.message ?? String(cause);
    super(`Cannot reach Keel at ${baseUrl} (${reason}); is it running?`);
    this.name = 'KeelConnectionError';
    this.baseUrl = baseUrl;
    this.reason = reason;
  }
}

/** How often a create is sent in all when no answer comes back, and the pause before each repeat (times the attempt). */
const CREATE_ATTEMPTS = 3;
const RETRY_DELAY_MS = 250;
const RETRYABLE_STATUSES = new Set([502, 503, 504]);

/**
 * A small typed client for the Keel HTTP API, built on `fetch`. Every method resolves with
 * the parsed answer or rejects with KeelApiError (an error answer) or KeelConnectionError.
 */
export class KeelClient {
  readonly baseUrl: string;
  private readonly token?: string;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /**
   * One call: `query` values that are undefined are left out; `headers` add to (never replace)
   * the authorization the client was built with.
   */
  async request<T>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    path = withQuery(path, options.query);
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await this.fetchImpl(this.baseUrl + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new KeelConnectionError(this.baseUrl, error);
    }
    const text = await response.text();
    let parsed: unknown = null;
    if (text) {
      try { parsed = JSON.parse(text); } catch { parsed = null; }
    }
    options.onHeaders?.(response.headers);
    if (!response.ok) throw new KeelApiError(response.status, parsed as never, `${method} ${path} answered ${response.status}${text && parsed === null ? `: ${text.slice(0, 200)}` : ''}`);
    return parsed as T;
  }

  get<T = unknown>(path: string, query?: RequestOptions['query']): Promise<T> {
    return this.request('GET', path, undefined, { query });
  }

  post<T = unknown>(path: string, body: unknown = {}, options?: RequestOptions): Promise<T> {
    return this.request('POST', path, body, options);
  }

  /**
   * A create that is safe to retry: it goes with an Idempotency-Key (the one given, else a fresh
   * one for this logical create) and, when no answer came (the connection failed or timed out)
   * or the kernel was briefly unavailable (502, 503, 504), it is sent again with the same key,
   * up to `attempts` times in all. The kernel then answers what the first request created
   * rather than creating it twice.
   */
  async create<T = unknown>(path: string, body: unknown, options: RequestOptions & { idempotencyKey?: string; attempts?: number } = {}): Promise<T> {
    const { idempotencyKey, attempts = CREATE_ATTEMPTS, ...rest } = options;
    const key = idempotencyKey ?? globalThis.crypto.randomUUID();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.request<T>('POST', path, body, { ...rest, headers: { ...rest.headers, 'idempotency-key': key } });
      } catch (error) {
        const retryable = error instanceof KeelConnectionError || (error instanceof KeelApiError && RETRYABLE_STATUSES.has(error.status));
        if (!retryable || attempt >= attempts) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS * attempt));
      }
    }
  }

  patch<T = unknown>(path: string, body: unknown): Promise<T> {
    return this.request('PATCH', path, body);
  }

  put<T = unknown>(path: string, body: unknown): Promise<T> {
    return this.request('PUT', path, body);
  }

  delete<T = unknown>(path: string): Promise<T> {
    return this.request('DELETE', path);
  }

  // ---- plugins ---------------------------------------------------------------------------

  listPlugins(): Promise<PluginRecord[]> {
    return this.request('GET', '/api/plugins');
  }

  getPlugin(key: string): Promise<PluginRecord> {
    return this.request('GET', `/api/plugins/${encodeURIComponent(key)}`);
  }

  installPlugin(source: InstallSource): Promise<PluginRecord> {
    return this.request('POST', '/api/plugins/install', source);
  }

  /** Grants the given capabilities (default: every declared one) and starts the plugin. */
  enablePlugin(key: string, options: { grant?: string[] } = {}): Promise<PluginRecord> {
    return this.request('POST', `/api/plugins/${encodeURIComponent(key)}/enable`, options.grant ? { grant: options.grant } : {});
  }

  disablePlugin(key: string): Promise<PluginRecord> {
    return this.request('POST', `/api/plugins/${encodeURIComponent(key)}/disable`, {});
  }

  /**
   * Re-reads the plugin's folder, runs new migrations and restarts it (calls in flight finish
   * first). Capabilities the new version adds must be granted here (`grant`) while it is enabled.
   */
  upgradePlugin(key: string, options: { grant?: string[] } = {}): Promise<PluginRecord> {
    return this.request('POST', `/api/plugins/${encodeURIComponent(key)}/upgrade`, options.grant ? { grant: options.grant } : {});
  }

  uninstallPlugin(key: string): Promise<{ ok: boolean; pluginKey: string }> {
    return this.request('DELETE', `/api/plugins/${encodeURIComponent(key)}`);
  }

  pluginHealth(key: string): Promise<PluginHealth> {
    return this.request('GET', `/api/plugins/${encodeURIComponent(key)}/health`);
  }

  pluginLogs(key: string, limit = 200): Promise<PluginLogs> {
    return this.request('GET', `/api/plugins/${encodeURIComponent(key)}/logs?limit=${limit}`);
  }

  listExamples(): Promise<ExamplePlugin[]> {
    return this.request('GET', '/api/plugins/examples');
  }

  uiContributions(): Promise<UiContributions> {
    return this.request('GET', '/api/plugins/ui-contributions');
  }

  listTools(): Promise<PluginTool[]> {
    return this.request('GET', '/api/plugins/tools');
  }

  executeTool(tool: string, input: unknown, options: { companyId?: string } = {}): Promise<{ tool: string; result: unknown }> {
    return this.request('POST', '/api/plugins/tools/execute', { tool, input, ...options });
  }
}
