import type { Context } from 'koa';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { readRaw } from '../http/body.ts';

/**
 * Serves one MCP request over Streamable HTTP in stateless mode: a server and a transport per
 * request, JSON answers (no SSE). Nothing an MCP client does here needs a session: every tool
 * call is a complete request authenticated on its own, the servers send no notifications and
 * make no requests of the client, and a stateless endpoint works the same behind any number of
 * Keel processes (no session to pin to one). GET (a standalone event stream) and DELETE (ending
 * a session) are therefore not served: 405.
 */
export async function serveMcp(ctx: Context, server: Server, bodyLimit: number): Promise<void> {
  // Read here, bounded by the instance's JSON limit; a body that is not JSON is answered by the
  // transport as a JSON-RPC parse error.
  const raw = await readRaw(ctx, bodyLimit);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  ctx.respond = false;
  // MCP requests are audited by what they call (tools write their own entries).
  ctx.state.activityWritten = true;
  const done = new Promise<void>((resolve) => {
    if (ctx.res.writableFinished || ctx.res.destroyed) resolve();
    ctx.res.once('close', () => resolve());
  });
  if (parsed === undefined) {
    ctx.res.writeHead(400, { 'content-type': 'application/json' });
    ctx.res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not JSON' } }));
  } else {
    await transport.handleRequest(ctx.req, ctx.res, parsed);
  }
  await done;
  await transport.close().catch(() => undefined);
  await server.close().catch(() => undefined);
}
