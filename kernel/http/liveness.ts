import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * `GET /api/health/live`: the process serves HTTP. It touches no database and no plugin, and
 * answers the same from the moment the port is bound (the early listener, while the kernel
 * starts) to the last request of a drain, so a process supervisor restarts only a process
 * that no longer answers at all. Whether to send traffic is readiness (`/api/health/ready`).
 */
export const LIVENESS_PATH = '/api/health/live';

export const LIVE_BODY = { status: 'ok' } as const;

/** A liveness probe, before the application serves: the path, with or without a query. */
export function isLivenessProbe(req: IncomingMessage): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const url = req.url ?? '';
  const query = url.indexOf('?');
  return (query === -1 ? url : url.slice(0, query)) === LIVENESS_PATH;
}

/** The early listener's answer to a liveness probe: alive, though not ready yet. */
export function answerLive(req: IncomingMessage, res: ServerResponse, requestId: string): void {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-request-id': requestId });
  res.end(req.method === 'HEAD' ? undefined : JSON.stringify(LIVE_BODY));
}
