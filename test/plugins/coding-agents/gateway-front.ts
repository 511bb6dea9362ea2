import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for the address a run is told to call back (the kernel's publicBaseUrl): calls
 * under `/api/llm/<providerId>/` are recorded (path and headers: the credential the tool sent)
 * and passed on to the scripted model of that provider with the prefix removed, as the model
 * gateway would forward them; everything else goes to Keel itself. It lets the routing of each
 * real tool be checked where it ends: at the provider, with the run token as the key.
 */
export interface GatewayFront {
  url: string;
  /** Where everything but /api/llm goes: set once Keel listens. */
  keel: string;
  /** The scripted model's base URL for each provider id. */
  providers: Map<string, string>;
  calls: Array<{ providerId: string; path: string; headers: IncomingMessage['headers'] }>;
  close(): Promise<void>;
}

export async function startGatewayFront(): Promise<GatewayFront> {
  const front: Omit<GatewayFront, 'url' | 'close'> = { keel: '', providers: new Map(), calls: [] };
  const server = createServer((req, res) => {
    const match = /^\/api\/llm\/([0-9a-f-]{36})(\/.*)$/.exec(req.url ?? '');
    if (match) {
      front.calls.push({ providerId: match[1]!, path: match[2]!.split('?')[0]!, headers: req.headers });
      const upstream = front.providers.get(match[1]!);
      if (!upstream) return answer(res, 404, { error: `no provider ${match[1]}` });
      return pass(req, res, new URL(`${upstream.replace(/\/$/, '')}${match[2]}`));
    }
    pass(req, res, new URL(`${front.keel}${req.url ?? '/'}`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(front, {
    url: `http://127.0.0.1:${port}`,
    close: async () => { server.closeAllConnections(); await new Promise<void>((resolve) => server.close(() => resolve())); },
  });
}

function pass(req: IncomingMessage, res: ServerResponse, target: URL): void {
  const { host: _host, ...headers } = req.headers;
  const out = request(target, { method: req.method, headers }, (answerStream) => {
    res.writeHead(answerStream.statusCode ?? 502, answerStream.headers);
    answerStream.pipe(res);
  });
  out.on('error', (error) => (res.headersSent ? res.destroy() : answer(res, 502, { error: error.message })));
  req.pipe(out);
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
