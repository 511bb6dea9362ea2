/**
 * Route answers other than one JSON value: raw text bodies (`text/markdown`, `text/csv`, ...)
 * and server-sent events. The route declares what it may answer under `response` in
 * plugin.json; the host sends only what was declared and checks every field before a byte is
 * written. The kernel reads the same lists (they are data, not behaviour).
 */

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
