import { Agent, request } from 'node:http';

/**
 * A bare HTTP client for the fuzz test: paths go out byte for byte (fetch would resolve `..`
 * and re-encode escapes), bodies are sent as given with the headers given, and the answer is
 * whatever the server said, or the transport error if it said nothing.
 */
export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

export interface RawAnswer {
  status: number;
  contentType: string;
  text: string;
  /** Set when no answer arrived (connection reset before the status line). */
  transportError?: string;
}

export function rawClient(baseUrl: string, connections: number): { send(req: RawRequest): Promise<RawAnswer>; close(): void } {
  const { hostname, port } = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const send = (req: RawRequest) => new Promise<RawAnswer>((resolve) => {
    let settled = false;
    const done = (answer: RawAnswer) => { if (!settled) { settled = true; resolve(answer); } };
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body !== undefined) headers['content-length'] = Buffer.byteLength(req.body);
    const outgoing = request({ host: hostname, port: Number(port), method: req.method, path: req.path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => done({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (error) => done({ status: res.statusCode ?? 0, contentType: '', text: '', transportError: error.message }));
    });
    // The server may answer (413, 415) and close before the whole body is written: the answer counts, the write error does not.
    outgoing.on('error', (error) => setTimeout(() => done({ status: 0, contentType: '', text: '', transportError: error.message }), 20));
    outgoing.end(req.body);
  });
  return { send, close: () => agent.destroy() };
}

/** Runs `work` over `items` with at most `limit` in flight, keeping the order of results. */
export async function pool<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!, index);
    }
  });
  await Promise.all(lanes);
  return results;
}
