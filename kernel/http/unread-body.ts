import type { IncomingMessage } from 'node:http';

/** How much of a refused request's body is read and discarded before the refusal is sent. */
export const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;
export const DISCARD_LIMIT_MS = 15_000;

/**
 * Reads and discards what is left of a request body, up to a byte and a time budget. A request
 * refused before (or while) its body was read (wrong company, too large, wrong type) must still
 * get its status and JSON error: answering and closing the connection while the client is
 * still sending makes the client fail with EPIPE or ECONNRESET before it reads the answer.
 * Resolves `true` when the body ended, `false` when a budget ran out (the caller then answers
 * and closes the connection: the client sent far more than anyone should).
 */
export function discardUnreadBody(req: IncomingMessage, limitBytes = DISCARD_LIMIT_BYTES, limitMs = DISCARD_LIMIT_MS): Promise<boolean> {
  if (req.complete || req.readableEnded || req.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    let discarded = 0;
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      req.off('data', count);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      resolve(ended);
    };
    const count = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > limitBytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onError = () => finish(false);
    const onClose = () => finish(req.complete);
    const timer = setTimeout(() => finish(false), limitMs);
    timer.unref();
    req.on('data', count);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onClose);
    // Whatever was piped into a parser that gave up must flow again.
    req.unpipe();
    req.resume();
  });
}
