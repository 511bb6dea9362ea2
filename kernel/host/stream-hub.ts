import type { Database } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import type { HeldStreams } from './sse-connection.ts';

/** NOTIFY payloads are at most 8000 bytes; the envelope takes a little of that. */
export const MAX_STREAM_EVENT_BYTES = 7_000;
export const STREAM_CHANNEL = 'keel_streams';
const CHANNEL_NAME = /^[a-z][a-z0-9-]{0,63}$/;

type Listener = (data: string) => void;
/** One open stream: what relays an event to it, and what ends it (the connection closes). */
interface Subscriber { listener: Listener; end: () => void }

/** Where a stream event belongs: one company, or the instance (calls that serve no company). */
export type StreamScope = { companyId: string } | { instance: true };

interface Envelope { p: string; s: string; c: string; d: string }

/**
 * Server-sent events that plugins publish (`ctx.streams.publish`) to subscribers of their
 * channels. A channel is scoped: events published by a call that serves a company reach only
 * subscribers of that company's channel, and those of a call that serves none reach only the
 * instance's channel, which instance admins alone may read. Every publish goes through
 * PostgreSQL NOTIFY, including to subscribers of the publishing process, so subscribers
 * connected to any Keel process sharing the database hear it, each exactly once.
 *
 * A plugin's streams live as long as its worker in this process: when the extension host stops
 * serving it (disable, uninstall, upgrade, or the change made by another process followed here),
 * every stream of the plugin is ended, and one opened after that (an answer of a call that was
 * draining) is ended at once. A client that wants the events of the plugin enabled again opens
 * a new stream, under the checks of that moment.
 */
export class StreamHub {
  private readonly listeners = new Map<string, Set<Subscriber>>();
  private readonly db: Database;
  private readonly serves: (plugin: string) => boolean;
  /** Streams this process holds open per `plugin/scope` (sse-connection.ts counts and bounds them). */
  readonly held: HeldStreams = new Map();

  /** `serves`: whether this process runs the plugin now (a stream is held only while it does). */
  constructor(db: Database, serves: (plugin: string) => boolean) {
    this.db = db;
    this.serves = serves;
  }

  static assertChannel(channel: unknown): asserts channel is string {
    if (typeof channel !== 'string' || !CHANNEL_NAME.test(channel)) throw new KeelError(400, 'invalid_channel', 'Channel names are lower-case letters, digits and dashes');
  }

  /** Relays the channel's events to `listener` until the returned function is called, or `end` is (the plugin stopped). */
  subscribe(plugin: string, scope: StreamScope, channel: string, listener: Listener, end: () => void): () => void {
    if (!this.serves(plugin)) {
      end();
      return () => undefined;
    }
    const key = keyOf(plugin, scopeKey(scope), channel);
    const set = this.listeners.get(key) ?? new Set<Subscriber>();
    const subscriber = { listener, end };
    set.add(subscriber);
    this.listeners.set(key, set);
    return () => { set.delete(subscriber); if (set.size === 0 && this.listeners.get(key) === set) this.listeners.delete(key); };
  }

  /** Ends every stream of a plugin this process holds: it is no longer served here. */
  endPlugin(plugin: string): void {
    const prefix = `${plugin}/`;
    for (const [key, set] of [...this.listeners]) {
      if (!key.startsWith(prefix)) continue;
      this.listeners.delete(key);
      for (const subscriber of set) subscriber.end();
    }
  }

  async publish(plugin: string, scope: StreamScope, channel: string, data: unknown): Promise<void> {
    StreamHub.assertChannel(channel);
    // One line of SSE data: newlines inside JSON strings are already escaped, so only raw ones could appear.
    const text = JSON.stringify(data ?? null);
    if (Buffer.byteLength(text) > MAX_STREAM_EVENT_BYTES) {
      throw new KeelError(413, 'event_too_large', `A stream event is at most ${MAX_STREAM_EVENT_BYTES} bytes of JSON; publish larger data in parts`);
    }
    const envelope: Envelope = { p: plugin, s: scopeKey(scope), c: channel, d: text };
    await this.db.query('select pg_notify(?, ?)', [STREAM_CHANNEL, JSON.stringify(envelope)]);
  }

  /** A notification on STREAM_CHANNEL, from this process or another. */
  deliver(payload: string): void {
    let envelope: Envelope;
    try { envelope = JSON.parse(payload) as Envelope; } catch { return; }
    const set = this.listeners.get(keyOf(envelope.p, envelope.s, envelope.c));
    if (!set) return;
    for (const subscriber of set) subscriber.listener(envelope.d);
  }
}

/** The key a stream is counted under: the plugin and the scope, not the channel (a plugin cannot spread a flood over channels). */
export function heldKey(plugin: string, scope: StreamScope): string {
  return `${plugin}/${scopeKey(scope)}`;
}

function scopeKey(scope: StreamScope): string {
  return 'companyId' in scope ? `company:${scope.companyId}` : 'instance';
}

function keyOf(plugin: string, scope: string, channel: string): string {
  return `${plugin}/${scope}/${channel}`;
}
