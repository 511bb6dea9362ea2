import type { Context } from 'koa';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
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
  const refusal = await preflight(ctx, bodyLimit);
  if (refusal) {
    // JSON-RPC's error shape, with the request id every Keel error body carries.
    ctx.status = refusal.status;
    ctx.body = { jsonrpc: '2.0', id: null, error: { code: refusal.code, message: refusal.message }, requestId: ctx.state.requestId };
    ctx.state.activityWritten = true;
    return;
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
  await transport.handleRequest(ctx.req, ctx.res, ctx.state.mcpBody);
  await done;
  await transport.close().catch(() => undefined);
  await server.close().catch(() => undefined);
}

/**
 * What the transport would refuse, refused here first with the same JSON-RPC codes but in
 * Keel's answer (the request id in the body, the kernel's headers): the client must accept JSON
 * and event streams (406), send JSON (415), a body that parses (-32700) and holds JSON-RPC
 * messages (-32600). The parsed body is handed on in ctx.state.mcpBody.
 */
async function preflight(ctx: Context, bodyLimit: number): Promise<{ status: number; code: number; message: string } | undefined> {
  const accept = ctx.get('accept');
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return { status: 406, code: -32000, message: 'Not Acceptable: the client must accept both application/json and text/event-stream' };
  }
  if (!/^application\/json\s*(;|$)/i.test(ctx.get('content-type'))) {
    return { status: 415, code: -32000, message: 'Unsupported Media Type: the body must be application/json' };
  }
  const raw = await readRaw(ctx, bodyLimit);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    return { status: 400, code: -32700, message: 'Parse error: the body is not JSON' };
  }
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  if (messages.length === 0 || !messages.every((message) => JSONRPCMessageSchema.safeParse(message).success)) {
    return { status: 400, code: -32600, message: 'Invalid Request: the body is not a JSON-RPC message (or a batch of them)' };
  }
  ctx.state.mcpBody = parsed;
  return undefined;
}
