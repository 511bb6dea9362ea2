import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * How long the HTTP server waits on a client (config server.headersTimeoutMs and
 * server.keepAliveTimeoutMs). Node 24 applies both to every connection:
 * - headersTimeout: from the moment a connection opens (or the previous request on it ends)
 *   until its request's headers are complete. A socket that sends nothing at all, or stops
 *   mid-headers, is answered 408 `request_timeout` and closed. Checked every
 *   connectionsCheckingInterval, so it closes within a tenth of the timeout after it.
 * - keepAliveTimeout: how long an idle keep-alive connection waits for its next request.
 * Neither applies once a request's headers are in: a request body still arriving is bounded by
 * requestTimeout (at least the upload deadline, limits.uploadSeconds), and a response being
 * written (an SSE stream, a streamed model answer) by nothing here: it ends when it is done or
 * the client leaves. Node's socket inactivity timeout (server.timeout) stays off for that reason.
 */
export interface ConnectionTimeouts {
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** The whole request, body included; at least the upload deadline. */
  requestTimeoutMs: number;
}

export const DEFAULT_HEADERS_TIMEOUT_MS = 30_000;
/** Above the 60 s idle timeout of common load balancers, so that one never reuses a connection Keel is closing. */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** Node's own default for a whole request; raised when uploads may take longer. */
const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
const DEFAULT_UPLOAD_SECONDS = 300;

export function connectionTimeouts(config: { server: { headersTimeoutMs?: number; keepAliveTimeoutMs?: number }; limits: { uploadSeconds?: number } }): ConnectionTimeouts {
  const headersTimeoutMs = config.server.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const uploadMs = (config.limits.uploadSeconds ?? DEFAULT_UPLOAD_SECONDS) * 1000;
  return {
    headersTimeoutMs,
    keepAliveTimeoutMs: config.server.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
    // Past the upload deadline, so that a slow upload gets the kernel's 408 upload_timeout, not a cut connection.
    requestTimeoutMs: Math.max(DEFAULT_REQUEST_TIMEOUT_MS, uploadMs + headersTimeoutMs),
  };
}

/** The options for node:http createServer that apply `timeouts`. */
export function serverTimeoutOptions(timeouts: ConnectionTimeouts): ServerOptions {
  return {
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    // Node checks expired connections this often (default 30 s, longer than the timeout itself).
    connectionsCheckingInterval: Math.min(5_000, Math.max(50, Math.floor(timeouts.headersTimeoutMs / 10))),
  };
}

interface ClientErrorAnswer { status: number; code: string; message: string }

/** What Node's parser refuses, in the JSON error body of docs/errors.md; anything else it cannot parse is `malformed_request`. */
const ANSWERS: Record<string, ClientErrorAnswer> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: 'request_header_too_large', message: 'The request headers are too large' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, code: 'payload_too_large', message: 'The chunk extensions of the request body are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'request_timeout', message: 'The request did not arrive in time' },
};
const MALFORMED: ClientErrorAnswer = { status: 400, code: 'malformed_request', message: 'The request is not well-formed HTTP' };

/**
 * Answers what Node's HTTP parser refuses before any handler runs (headers too large, a
 * request line that is not HTTP, a request that did not arrive in time) with the kernel's JSON
 * error body instead of Node's empty one, then closes the connection. Nothing is written when
 * the socket cannot take it (the client is gone) or a response has already begun on it.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const answer = ANSWERS[error.code ?? ''] ?? MALFORMED;
    const requestId = randomUUID();
    const body = JSON.stringify({ error: answer.message, code: answer.code, requestId });
    socket.end([
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Cache-Control: no-store',
      'Connection: close',
      '',
      body,
    ].join('\r\n'));
    // The client may keep sending; what it sends next is not read.
    socket.once('finish', () => socket.destroy());
  });
}
