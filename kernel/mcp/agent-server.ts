import type { Context } from 'koa';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Actor } from '../auth/actor.ts';
import { validationFailed } from '../http/errors.ts';
import type { ExtensionHost } from '../host/extension-host.ts';
import { enabledTool, enabledTools } from '../host/plugin-tools.ts';
import { executeTool, toolChangePending } from '../host/tool-execution.ts';
import { availableCoreTools, IDEMPOTENCY_INPUT, type AvailableCoreTool } from './core-tools.ts';
import type { SelfRequest } from './self-request.ts';
import { answerResult, toolError, toolResult } from './tool-results.ts';

export const SERVER_INFO = { name: 'keel', version: '1.0.0' };

/**
 * The MCP server of `POST /api/mcp` for one authenticated request: the core work tools the
 * caller may use, then every tool of every enabled plugin under `<plugin>.<tool>`. A plugin
 * tool runs through executeTool, the code of POST /api/plugins/tools/execute (the caller's
 * identity, run and company; `?companyId=` on the endpoint names the company for a board
 * caller); a core tool is its HTTP route, called as the caller through the kernel's own
 * request path.
 */
export function agentServer(ctx: Context, host: ExtensionHost, self: SelfRequest): Server {
  const actor = ctx.state.actor as Actor;
  const companyId = typeof ctx.query.companyId === 'string' ? ctx.query.companyId : undefined;
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions: 'Keel: core work tools (me, inbox, issues, comments, documents, cost report) and the tools of the enabled plugins, named <plugin>.<tool>. Every call runs as you, in your company, as the HTTP API would.',
  });

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const core: Tool[] = availableCoreTools(host, actor).map(({ tool, inputSchema }) => ({ name: tool.name, description: tool.description, inputSchema: inputSchema as Tool['inputSchema'] }));
    const plugins: Tool[] = enabledTools(host).map(({ name, tool }) => ({ name, description: tool.description, inputSchema: objectSchema(tool.inputSchema), ...(tool.readOnly ? { annotations: { readOnlyHint: true } } : {}) }));
    return { tools: [...core, ...plugins] };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name } = request.params;
    const input = request.params.arguments ?? {};
    if (name.includes('.')) {
      const found = enabledTool(host, name);
      if (!found) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name} (no enabled plugin offers it)`);
      // Withheld (changed since approved): not listed, and refused with why, as the HTTP route refuses it.
      if (found.withheld) return toolError(toolChangePending(found.plugin.key, found.tool.key));
      try {
        return toolResult((await executeTool(ctx, host, { tool: name, input, companyId })).result);
      } catch (error) {
        return toolError(error);
      }
    }
    const core = availableCoreTools(host, actor).find((available) => available.tool.name === name);
    if (!core) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    try {
      return answerResult(await callCoreTool(ctx, self, core, withCompany(core, input, actor, companyId)));
    } catch (error) {
      return toolError(error);
    }
  });
  return server;
}

/** A core tool's company parameter, when the input leaves it out: the agent's company, or the one the endpoint names. */
function withCompany(core: AvailableCoreTool, input: Record<string, unknown>, actor: Actor, companyId: string | undefined): Record<string, unknown> {
  const param = core.tool.companyParam;
  if (!param || input[param] !== undefined) return input;
  const company = actor.kind === 'agent' ? actor.companyId : companyId;
  if (!company) throw validationFailed(`tool input: ${param} is required for a board caller unless the endpoint names the company (?companyId=)`, [{ path: param, message: 'is required' }]);
  return { ...input, [param]: company };
}

/** MCP lists object schemas: a tool schema that leaves out `type` (ajv reads it as any value) is listed as an object. */
function objectSchema(schema: Record<string, unknown>): Tool['inputSchema'] {
  return (schema.type === undefined ? { type: 'object', ...schema } : schema) as Tool['inputSchema'];
}

function callCoreTool(ctx: Context, self: SelfRequest, core: AvailableCoreTool, input: Record<string, unknown>) {
  const { tool } = core;
  for (const param of Object.keys(tool.params ?? {})) {
    const value = input[param];
    if (typeof value !== 'string' || value === '') throw validationFailed(`tool input: ${param} is required and must be a non-empty string`, [{ path: param, message: 'must be a non-empty string' }]);
  }
  const used = new Set<string>();
  const path = tool.path.replace(/:([A-Za-z]+)/g, (_match, param: string) => {
    used.add(param);
    return encodeURIComponent(input[param] as string);
  });
  if (core.idempotent) used.add(IDEMPOTENCY_INPUT);
  const rest = Object.fromEntries(Object.entries(input).filter(([key]) => !used.has(key)));
  const idempotencyKey = core.idempotent && typeof input[IDEMPOTENCY_INPUT] === 'string' ? input[IDEMPOTENCY_INPUT] as string : undefined;
  const headers = { authorization: ctx.get('authorization'), 'x-service-run-id': ctx.get('x-service-run-id') || undefined, 'idempotency-key': idempotencyKey };
  if (tool.method === 'GET') {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(rest)) if (value !== undefined && value !== null) query.set(key, typeof value === 'string' ? value : JSON.stringify(value));
    const search = query.toString();
    return self.call('GET', search ? `${path}?${search}` : path, { headers });
  }
  return self.call(tool.method, path, { headers, body: rest });
}
