/**
 * Route answers other than one JSON value: raw text bodies (`text/markdown`, `text/csv`, ...)
 * and server-sent events. The route declares what it may answer under `response` in
 * plugin.json; the host sends only what was declared and checks every field before a byte is
 * written. The kernel reads the same lists (they are data, not behaviour).
 */
import type { MeteredUsage, PriceRates } from '../shared/model-prices.ts';

/**
 * The media types a route may declare under `response.contentTypes`. Closed on purpose: a type
 * a browser renders as a document or runs as code (text/html, image/svg+xml, XML, JavaScript,
 * CSS, PDF) would let plugin-chosen text execute in Keel's origin, so those are refused when the
 * manifest is validated rather than served under some disguise.
 */
export const RAW_CONTENT_TYPES = [
  'text/plain', 'text/markdown', 'text/csv', 'text/tab-separated-values', 'text/calendar', 'text/vcard',
  'text/yaml', 'application/yaml', 'application/x-ndjson', 'application/octet-stream',
] as const;
export type RawContentType = typeof RAW_CONTENT_TYPES[number];

/** An event of a server-sent event answer. `data` is any JSON value, sent as one line of JSON. */
export interface ServerSentEvent {
  /** The SSE `event:` field: 1-64 letters, digits, `.`, `_` or `-`. */
  event?: string;
  /** The SSE `id:` field (what the client sends back as Last-Event-ID): 1-128 visible ASCII characters. */
  id?: string;
  data: unknown;
}

/** The wire form of an event answer (what {@link respondEvents} returns). */
export interface EventsAnswer {
  $response: {
    status?: number;
    headers?: Record<string, string>;
    events: ServerSentEvent[];
    stream?: { channel: string };
  };
}

/**
 * A server-sent event answer, for a route declared with `response: { stream: 'sse' }`.
 *
 * Without `channel`, the events are sent and the answer ends (a one-shot stream, as MCP's
 * Streamable HTTP answers a POST). With `channel`, the events are sent first and the host then
 * holds the connection and relays what the plugin publishes with `ctx.streams.publish(channel,
 * data)` in the request's company (its instance channel when the route serves no company, which
 * only instance admins may hold), from any Keel process, until the client leaves.
 */
export function respondEvents(events: ServerSentEvent[], options: { channel?: string; headers?: Record<string, string> } = {}): EventsAnswer {
  return { $response: { events, ...(options.headers ? { headers: options.headers } : {}), ...(options.channel ? { stream: { channel: options.channel } } : {}) } };
}

/** How the kernel reads a proxied answer's usage: the wire format of the provider. */
export type MeterKind = 'anthropic' | 'openai-responses' | 'openai-chat' | 'gemini' | 'none';
export const METER_KINDS: readonly MeterKind[] = ['anthropic', 'openai-responses', 'openai-chat', 'gemini', 'none'];

/** Upstream headers a proxy answer may carry the credential in. */
export const PROXY_CREDENTIAL_HEADERS = ['x-api-key', 'authorization', 'x-goog-api-key'] as const;

/**
 * What a route declared with `proxy` answers to have the kernel forward the request to a model
 * provider (the decision is the plugin's; the exchange, metering and the cut are the kernel's).
 */
export interface ProxySpec {
  /** Absolute upstream URL: https, or http/https to a host the operator lists in llm.privateNetworkHosts (checked after DNS too). */
  url: string;
  /** The company's key from the vault: a secret of the request's company; the kernel resolves it (audited) and sends `${prefix ?? ''}${value}` in `header`. The plugin never sees the value. */
  credential: { secretId: string; version?: number | 'latest'; header: typeof PROXY_CREDENTIAL_HEADERS[number]; prefix?: string };
  /** Extra upstream headers (never credential or hop-by-hop ones). */
  headers?: Record<string, string>;
  /** Top-level JSON body fields set before forwarding (e.g. stream_options: {include_usage: true}); otherwise the body is forwarded byte for byte. */
  setBodyFields?: Record<string, unknown>;
  meter: MeterKind;
  /** Price of the call's model; null = unpriced (metered, 0 cents). */
  rates: PriceRates | null;
  /** The stream is cut once its running cost (exactCents of delivered usage, output estimated while streaming) exceeds this. null = no limit. */
  limitCents: number | null;
  /** Message of the final error event sent to the client when the stream is cut, in the meter's wire shape. */
  cutMessage?: string;
  /** Longest silence from the upstream before the exchange is ended (default 300 000 ms). */
  idleTimeoutMs?: number;
  /** Longest whole exchange (default 3 600 000 ms). */
  maxDurationMs?: number;
  /** JSON (<= 8 KiB) handed back unchanged in proxy.finished (agentId, runId, providerId, model, ...). */
  report: Record<string, unknown>;
  /**
   * What the client gets: `provider` (default) the provider's answer as it arrives; `summary` the
   * kernel's JSON `{ok, status, latencyMs, error}` once the provider's answer has ended (a
   * provider test: the board learns whether the call works, how long it took and the provider's
   * own error message, never the provider's bytes). Metered and delivered as proxy.finished alike.
   */
  answer?: 'provider' | 'summary';
}

/** The wire form of a proxy answer (what {@link respondProxy} returns). */
export interface ProxyAnswer { $response: { proxy: ProxySpec } }

/**
 * Forward the request to a model provider, for a route declared with `proxy` (needs http.proxy).
 * The kernel sends the raw request body (with `setBodyFields` applied) to `url` with the
 * credential from the vault, streams the answer back as it arrives, meters it with `meter`, cuts
 * it past `limitCents`, and delivers `proxy.finished` to this plugin alone when it ends.
 */
export function respondProxy(spec: ProxySpec): ProxyAnswer {
  return { $response: { proxy: spec } };
}

/** How a proxied call ended. */
export type ProxyCallStatus = 'completed' | 'cut' | 'upstream_error' | 'broken' | 'client_gone' | 'timed_out' | 'lost';

/**
 * The kernel event `proxy.finished`, delivered only to the plugin that answered the proxy, at
 * least once (be idempotent by `callId`).
 */
export type ProxyFinishedEvent = {
  callId: string;
  companyId: string;
  status: ProxyCallStatus;
  /** The upstream's status; null when none was received. */
  httpStatus: number | null;
  /** The model as the provider's answer names it, when it does. */
  model: string | null;
  usage: MeteredUsage;
  /** True when the provider never reported final usage (broken, cut, lost, ...): part of `usage` was estimated. */
  usageEstimated: boolean;
  /** callCents(rates, usage); 0 when the spec's rates were null. */
  costCents: number;
  startedAt: string;
  finishedAt: string;
  firstByteMs: number | null;
  /** The spec's `report`, unchanged. */
  report: Record<string, unknown>;
};
