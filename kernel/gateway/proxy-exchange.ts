import type { IncomingMessage, ServerResponse } from 'node:http';
import { exactCents, ZERO_USAGE } from '../../sdk/shared/model-prices.ts';
import type { Meter } from './meters/index.ts';
import { eventBoundary } from './meters/sse-lines.ts';
import type { CallEnd } from './proxied-calls.ts';
import type { CheckedSpec } from './proxy-spec.ts';
import type { SummaryBody } from './proxy-summary.ts';
import { answerHeaders } from './upstream.ts';

/** Why the kernel ended an exchange before the provider did. */
export type StopReason = 'client_gone' | 'timed_out' | 'lost';

export interface Exchange {
  spec: CheckedSpec;
  meter: Meter;
  /** The client's response, written directly: nothing buffers the answer. */
  res: ServerResponse;
  upstream: IncomingMessage;
  /** Ends the upstream request (the provider connection is closed). */
  abortUpstream(): void;
  /** Milliseconds since the request arrived (for firstByteMs). */
  elapsed(): number;
  /** Set when the kernel stops the exchange (the client left, a timeout, the process stops). */
  stopped(): StopReason | null;
  /** Called when the kernel wants the exchange stopped; resolves the pending read. */
  onStop(listener: (reason: StopReason) => void): void;
  /** A summary answer (spec.answer 'summary'): the provider's answer is collected here, not sent; the caller answers the client. */
  collect?: SummaryBody;
}

/**
 * Streams the provider's answer to the client as it arrives and meters the copy: an SSE answer
 * is forwarded up to its last complete event (so a cut lands between events), anything else
 * byte for byte. Past the limit, the stream is cut: the provider connection closed, the client
 * given a final error event in the wire's shape. Resolves with how the call ended; the caller
 * ends the client's answer.
 */
export function streamAnswer(x: Exchange): Promise<CallEnd> {
  const { spec, meter, res, upstream } = x;
  const status = upstream.statusCode ?? 502;
  const streaming = status < 400 && String(upstream.headers['content-type'] ?? '').toLowerCase().includes('text/event-stream');
  const cuttable = streaming && meter.metered && spec.rates !== null && spec.limitCents !== null;
  let firstByteMs: number | null = null;
  let pending: Buffer = Buffer.alloc(0);

  const collect = x.collect;
  if (!collect) {
    res.writeHead(status, { ...answerHeaders(upstream.headers), ...(streaming ? { 'cache-control': 'no-cache', 'x-accel-buffering': 'no' } : {}) });
    res.flushHeaders();
  }
  /**
   * Writes the answer's last bytes; the caller ends it once the call is recorded (a call that
   * crossed its limit only after its cost has reached the plugin, see model-gateway.ts). A
   * summary's caller answers the client itself.
   */
  const close = (last?: string): void => { if (!collect && last) res.write(last); };

  const write = (bytes: Buffer | string): void => {
    if (firstByteMs === null) firstByteMs = Math.round(x.elapsed());
    if (collect) { collect.add(typeof bytes === 'string' ? Buffer.from(bytes) : bytes); return; }
    if (!res.write(bytes) && !upstream.isPaused()) {
      upstream.pause();
      res.once('drain', () => upstream.resume());
    }
  };

  return new Promise<CallEnd>((resolve) => {
    let settled = false;
    const end = (outcome: CallEnd['status']): void => {
      if (settled) return;
      settled = true;
      const answered = outcome !== 'upstream_error';
      const metered = meter.metered && answered;
      resolve({
        status: outcome, httpStatus: status, model: meter.state.model,
        usage: metered ? meter.state.usage() : { ...ZERO_USAGE }, usageEstimated: metered && !meter.state.final, firstByteMs,
      });
    };
    const overLimit = (): boolean => cuttable && exactCents(spec.rates!, meter.state.usage()) > spec.limitCents!;

    upstream.on('data', (chunk: Buffer) => {
      if (settled || x.stopped()) return;
      if (!streaming) {
        write(chunk);
        meter.bodyChunk(chunk);
        return;
      }
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const boundary = eventBoundary(pending);
      if (boundary === 0) return;
      const events = pending.subarray(0, boundary);
      pending = pending.subarray(boundary);
      write(events);
      meter.events(events);
      if (overLimit()) {
        // The cut: nothing more of the provider's answer reaches the client.
        x.abortUpstream();
        close(meter.cutFrame(spec.cutMessage));
        end('cut');
      }
    });
    upstream.on('end', () => {
      if (settled) return;
      if (streaming) {
        if (pending.length > 0) { write(pending); meter.events(pending); }
        meter.endStream();
      } else {
        meter.endBody();
      }
      close();
      end(status >= 400 ? 'upstream_error' : 'completed');
    });
    const broken = (): void => {
      if (settled) return;
      const reason = x.stopped();
      if (reason === 'timed_out') close();
      else if (!collect) res.destroy();
      end(reason ?? 'broken');
    };
    upstream.on('aborted', broken);
    upstream.on('error', broken);
    upstream.on('close', () => { if (!upstream.complete) broken(); });
    x.onStop(() => {
      x.abortUpstream();
      broken();
    });
    // Stopped, or the provider's answer broken, before these listeners existed (while the
    // call's row was being written, say: a client killed then): the stop's listeners were
    // already called and the upstream's close has come and gone, so nothing would end the
    // exchange and its row would stay running, its lease renewed, for good.
    if (x.stopped()) {
      x.abortUpstream();
      broken();
    } else if (upstream.destroyed && !upstream.complete) {
      broken();
    }
  });
}
