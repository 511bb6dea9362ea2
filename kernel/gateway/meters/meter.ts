import type { MeterKind } from '../../../sdk/plugin/answers.ts';
import type { MeteredUsage } from '../../../sdk/shared/model-prices.ts';
import { SseParser } from '../../http/sse-parser.ts';
import { jsonOf, type SseEvent } from './sse-lines.ts';

/**
 * What a wire format's meter knows of one answer. Reported figures replace estimates field by
 * field as the provider reports them; `final` once the provider has reported the whole call's
 * usage. While streaming, output not reported yet is estimated from the delivered deltas
 * (ceil(chars/4), at least 1 per delta) and input not reported yet from the request body
 * (ceil(bytes/4)), so that a running cost exists before the provider says anything.
 */
export class MeterState {
  input: number | null = null;
  cachedInput: number | null = null;
  cacheWrite: number | null = null;
  output: number | null = null;
  final = false;
  model: string | null = null;
  estimatedOutput = 0;
  readonly estimatedInput: number;

  constructor(requestBytes: number) {
    this.estimatedInput = Math.ceil(requestBytes / 4);
  }

  /** A delta of delivered text or JSON: counted towards the output estimate. */
  delta(text: unknown): void {
    if (typeof text === 'string') this.estimatedOutput += Math.max(1, Math.ceil(text.length / 4));
  }

  usage(): MeteredUsage {
    const output = this.final ? this.output ?? this.estimatedOutput : Math.max(this.output ?? 0, this.estimatedOutput);
    return { inputTokens: this.input ?? this.estimatedInput, cachedInputTokens: this.cachedInput ?? 0, cacheWriteTokens: this.cacheWrite ?? 0, outputTokens: output };
  }
}

/** One wire format: how its events and its JSON answer report usage, and its final error event. */
export interface WireFormat {
  /** A streamed event (JSON data already parsed; null when it is not JSON). */
  event(state: MeterState, event: SseEvent, data: Record<string, unknown> | null): void;
  /** The whole JSON answer of a call that did not stream. */
  body(state: MeterState, body: Record<string, unknown>): void;
  /** The last event the client gets when a stream is cut, in this format's error shape. */
  cutFrame(message: string): string;
  /** The stream ended on its own (not cut, not broken). */
  streamEnded?(state: MeterState): void;
}

/** Largest non-streamed answer the meter keeps to read its usage (the answer itself is forwarded whatever its size). */
const MAX_METERED_JSON = 16 * 1024 * 1024;

/** The meter of one exchange: fed the bytes as they are forwarded. */
export class Meter {
  readonly state: MeterState;
  private readonly format: WireFormat | null;
  private readonly decoder = new TextDecoder();
  /** The kernel's one SSE parser (the executor reads run servers' streams with it too). */
  private readonly parser: SseParser;
  private json: Buffer[] = [];
  private jsonBytes = 0;
  streaming = false;

  constructor(format: WireFormat | null, requestBytes: number) {
    this.format = format;
    this.state = new MeterState(format ? requestBytes : 0);
    this.parser = new SseParser((event, data) => {
      // The parser names an event without an `event:` field `message`, as the SSE standard does.
      this.format?.event(this.state, { event: event === 'message' ? null : event, data }, jsonOf(data));
    });
  }

  get metered(): boolean { return this.format !== null; }

  /** Whole events of a streamed answer (the exchange forwards only up to an event boundary). */
  events(bytes: Buffer): void {
    if (!this.format) return;
    this.parser.push(this.decoder.decode(bytes, { stream: true }));
  }

  /** A piece of a JSON answer, read whole at the end. */
  bodyChunk(bytes: Buffer): void {
    if (!this.format || this.jsonBytes > MAX_METERED_JSON) return;
    this.jsonBytes += bytes.length;
    this.json.push(bytes);
  }

  /** The JSON answer is complete. */
  endBody(): void {
    if (!this.format || this.jsonBytes > MAX_METERED_JSON || this.jsonBytes === 0) return;
    const body = jsonOf(Buffer.concat(this.json).toString('utf8').trim());
    this.json = [];
    if (body) this.format.body(this.state, body);
  }

  /** The streamed answer ended on its own: what was last reported may now be final. */
  endStream(): void {
    // A last event the provider did not close with a blank line still counts.
    if (this.format) this.parser.end();
    this.format?.streamEnded?.(this.state);
  }

  cutFrame(message: string): string {
    return this.format?.cutFrame(message) ?? '';
  }
}

export function numberOr(value: unknown, fallback: number | null): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : fallback;
}

export type { MeterKind };
