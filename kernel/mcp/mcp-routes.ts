import type { RouteModule } from '../http/app.ts';
import { kernelRouterOf } from '../http/app.ts';
import { unauthorized } from '../http/errors.ts';
import { declareRoutes } from '../http/route-spec.ts';
import type { ExtensionHost } from '../host/extension-host.ts';
import { agentServer } from './agent-server.ts';
import { publicServer } from './public-server.ts';
import type { SelfRequest } from './self-request.ts';
import { serveMcp } from './streamable.ts';

const MCP_BODY = { contentType: 'application/json', description: 'One JSON-RPC message (or a batch) of the Model Context Protocol, Streamable HTTP transport; the client accepts application/json and text/event-stream.' };

/**
 * The MCP endpoints (docs/api/mcp.md): `POST /api/mcp` for agents and operators, with their
 * API credentials; `POST /mcp`, public and read-only, over the documentation.
 */
export const mcpRoutes = (host: ExtensionHost, self: SelfRequest): RouteModule => (router, kernel) => {
  const route = declareRoutes(router, kernel, 'MCP');

  route({
    method: 'POST', path: '/api/mcp', auth: 'any', rawBody: MCP_BODY, success: [200, 202], contentType: 'application/json', errors: [400, 401, 415],
    summary: 'MCP (Streamable HTTP, stateless) for agents and operators: core work tools and every enabled plugin tool',
    description: 'Authenticated by an agent API key, a run JWT (with X-Service-Run-Id) or a board API key in the Authorization header; a browser session is not enough. `?companyId=` names the company plugin tools run in for a board caller.',
  }, async (ctx) => {
    // A bearer credential, never a session cookie alone: an MCP client is a program, and a
    // page a board user visits must not be able to drive tools with the user's session.
    if (!/^Bearer\s+\S/i.test(ctx.get('authorization'))) throw unauthorized('MCP needs an API credential: Authorization: Bearer <agent key, run JWT or board key>');
    await serveMcp(ctx, agentServer(ctx, host, self), kernel.config.limits.jsonBodyBytes);
  });

  route({
    method: 'POST', path: '/mcp', auth: 'none', rawBody: MCP_BODY, success: [200, 202], contentType: 'application/json', errors: [400, 415],
    summary: 'Public, read-only MCP: search and read the API documentation, the OpenAPI document and the connectors',
  }, async (ctx) => {
    await serveMcp(ctx, publicServer(kernel, host, () => kernelRouterOf(kernel), self), kernel.config.limits.jsonBodyBytes);
  });
};
