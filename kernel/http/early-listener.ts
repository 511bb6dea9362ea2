import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerClientErrors, serverTimeoutOptions, type ConnectionTimeouts } from './connection-limits.ts';
import { answerLive, isLivenessProbe } from './liveness.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The kernel's HTTP server, bound before anything else starts: a port in use then fails the
 * start at once with nothing to undo. Until `serve` hands it the application, every request
 * answers 503 `starting`, so a load balancer's health check sees an honest "not yet"; only the
 * liveness probe (`/api/health/live`) answers 200, since the process does serve.
 *
 * From the first connection on, the server closes connections that send nothing or stall
 * mid-headers, and answers what Node's parser refuses with the JSON error body
 * (connection-limits.ts): the same server serves the kernel once it is up.
 *
 * `close` drains: it stops accepting connections, lets requests in flight finish (their
 * responses ask the client to close the connection), and after the deadline closes whatever
 * is still open.
 */
export interface EarlyListener {
  server: Server;
  url: string;
  serve(handler: Handler): void;
  close(drainMs: number): Promise<void>;
}

export class ListenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ListenError';
  }
}

export async function listenEarly(host: string, port: number, timeouts: ConnectionTimeouts): Promise<EarlyListener> {
  let handler: Handler = answerStarting;
  let draining = false;
  let inFlight = 0;
  let idle: (() => void) | null = null;
  const server = createServer(serverTimeoutOptions(timeouts), (req, res) => {
    inFlight++;
    if (draining) res.setHeader('Connection', 'close');
    res.once('close', () => {
      inFlight--;
      if (inFlight === 0) idle?.();
    });
    handler(req, res);
  });
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(new ListenError(describeListenError(error, host, port))));
    server.listen(port, host, () => resolve());
  });
  // After start-up, errors on the listening socket are not fatal to requests in flight.
  server.on('error', () => undefined);
  const address = server.address() as AddressInfo;
  const hostname = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    server,
    url: `http://${hostname}:${address.port}`,
    serve(next) { handler = next; },
    close(drainMs) {
      closing ??= new Promise<void>((resolve) => {
        draining = true;
        server.close(() => resolve());
        server.closeIdleConnections();
        const finish = () => { clearTimeout(deadline); server.closeAllConnections(); };
        const deadline = setTimeout(finish, drainMs);
        deadline.unref();
        idle = finish;
        if (inFlight === 0) finish();
      });
      return closing;
    },
  };
}

const STARTING = { status: 503, code: 'starting', message: 'Keel is starting' } as const;

function answerStarting(req: IncomingMessage, res: ServerResponse): void {
  const requestId = randomUUID();
  if (isLivenessProbe(req)) { answerLive(req, res, requestId); return; }
  res.writeHead(STARTING.status, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', connection: 'close', 'x-request-id': requestId });
  res.end(JSON.stringify({ error: STARTING.message, code: STARTING.code, requestId }));
}

function describeListenError(error: NodeJS.ErrnoException, host: string, port: number): string {
  switch (error.code) {
    case 'EADDRINUSE': return `port ${port} is in use on ${host}: stop whatever listens there, or choose another port with --port or PORT`;
    case 'EACCES': return `permission denied to listen on ${host}:${port}: choose a port above 1023 with --port or PORT`;
    case 'EADDRNOTAVAIL': return `address ${host} is not available on this machine: choose another with --host or HOST`;
    default: return `could not listen on ${host}:${port}: ${error.message}`;
  }
}
