import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Router } from '@koa/router';
import { renderedOpenApi } from '../host/api/openapi-routes.ts';
import type { ExtensionHost } from '../host/extension-host.ts';
import type { KernelServices } from '../services.ts';
import { apiDocPages, score, snippet, terms } from './public-docs.ts';
import type { SelfRequest } from './self-request.ts';
import { answerResult, toolResult } from './tool-results.ts';
import { SERVER_INFO } from './agent-server.ts';

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

const TOOLS: Tool[] = [
  { name: 'docs_list', description: "The pages of Keel's API documentation: page name and title.", inputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } },
  {
    name: 'docs_search', description: "Search Keel's API documentation and the OpenAPI operations of this instance by keywords; answers the best sections and operations with excerpts.",
    inputSchema: { type: 'object', required: ['query'], properties: { query: { type: 'string', minLength: 1, maxLength: 200 }, limit: { type: 'integer', minimum: 1, maximum: 20, description: 'How many results (default 8).' } } },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'docs_read', description: 'One page of the API documentation as markdown, by page name (from docs_list or docs_search).',
    inputSchema: { type: 'object', required: ['page'], properties: { page: { type: 'string', minLength: 1, maxLength: 100 } } }, annotations: { readOnlyHint: true },
  },
  {
    name: 'openapi_read', description: 'The OpenAPI 3.1 document of this instance: without a path, the list of operations (method, path, summary); with a path (as the document writes it, e.g. /api/issues/{issueId}), that path item, or one method of it.',
    inputSchema: { type: 'object', properties: { path: { type: 'string', maxLength: 300 }, method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] } } }, annotations: { readOnlyHint: true },
  },
  { name: 'connectors_list', description: 'The connectors catalog (markdown): how agents reach Keel\'s tools over MCP, one entry per connector.', inputSchema: { type: 'object', properties: {} }, annotations: { readOnlyHint: true } },
  {
    name: 'connector_read', description: "One connector's page (markdown): overview, set-up and its tools, by slug (from connectors_list).",
    inputSchema: { type: 'object', required: ['slug'], properties: { slug: { type: 'string', pattern: '^[a-z][a-z0-9._-]{0,63}$' } } }, annotations: { readOnlyHint: true },
  },
];

type OpenApi = { paths?: Record<string, Record<string, { summary?: string; description?: string }>> };

/**
 * The MCP server of the public `POST /mcp`: read-only tools over the API documentation
 * (docs/api/*.md), this instance's OpenAPI document and the website's connector pages (read
 * through the kernel's own request path, so they are what GET /product/... answers). No
 * credentials are read or forwarded: nothing here reaches company data.
 */
export function publicServer(kernel: KernelServices, host: ExtensionHost, router: () => Router | undefined, self: SelfRequest): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions: "Keel's public documentation: search and read the API documentation, the OpenAPI document and the connectors. Agents use the authenticated endpoint /api/mcp for work.",
  });
  const openApi = (): OpenApi => {
    const mounted = router();
    if (!mounted) throw new McpError(ErrorCode.InternalError, 'The API reference is not ready yet');
    return JSON.parse(renderedOpenApi(kernel, host, mounted).text) as OpenApi;
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    try {
      return await callPublicTool(request.params.name, args);
    } catch (error) {
      // Bad arguments are the model's to correct: a tool error, as a validation failure of the API is.
      if (error instanceof ArgumentError) return invalid(error.message);
      throw error;
    }
  });

  async function callPublicTool(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    switch (name) {
      case 'docs_list':
        return toolResult(apiDocPages().map(({ page, title }) => ({ page, title })));
      case 'docs_search': {
        const query = stringArg(args, 'query', 200);
        const limit = Number.isInteger(args.limit) && (args.limit as number) >= 1 && (args.limit as number) <= 20 ? args.limit as number : 8;
        const wanted = terms(query);
        if (!wanted.length) return invalid('query needs at least one word of two or more letters or digits');
        const results: Array<{ kind: string; score: number; [key: string]: unknown }> = [];
        for (const doc of apiDocPages()) {
          for (const section of doc.sections) {
            const found = score(wanted, section.heading, section.text);
            if (found) results.push({ kind: 'doc', score: found, page: doc.page, heading: section.heading, excerpt: snippet(section.text, wanted) });
          }
        }
        for (const [path, item] of Object.entries(openApi().paths ?? {})) {
          for (const [method, operation] of Object.entries(item)) {
            if (!HTTP_METHODS.includes(method)) continue;
            const found = score(wanted, `${method} ${path}`, `${operation.summary ?? ''} ${operation.description ?? ''}`);
            if (found) results.push({ kind: 'operation', score: found, method: method.toUpperCase(), path, summary: operation.summary ?? null });
          }
        }
        results.sort((a, b) => b.score - a.score);
        return toolResult(results.slice(0, limit));
      }
      case 'docs_read': {
        const page = stringArg(args, 'page', 100).replace(/\.md$/, '');
        const doc = apiDocPages().find((candidate) => candidate.page === page);
        if (!doc) return invalid(`No documentation page "${page}"; docs_list names them`, 404, 'doc_not_found');
        return toolResult(doc.text);
      }
      case 'openapi_read': {
        const document = openApi();
        if (args.path === undefined) {
          const operations = Object.entries(document.paths ?? {}).flatMap(([path, item]) => Object.entries(item)
            .filter(([method]) => HTTP_METHODS.includes(method)).map(([method, operation]) => ({ method: method.toUpperCase(), path, summary: operation.summary ?? null })));
          return toolResult(operations);
        }
        const path = stringArg(args, 'path', 300);
        const item = document.paths?.[path];
        if (!item) return invalid(`No path "${path}" in the OpenAPI document`, 404, 'path_not_found');
        if (args.method === undefined) return toolResult(item);
        const operation = item[String(args.method).toLowerCase()];
        return operation ? toolResult(operation) : invalid(`${String(args.method)} is not an operation of ${path}`, 404, 'operation_not_found');
      }
      case 'connectors_list':
        return answerResult(await self.call('GET', '/product/connectors.md'));
      case 'connector_read': {
        const slug = stringArg(args, 'slug', 64);
        if (!/^[a-z][a-z0-9._-]{0,63}$/.test(slug)) return invalid('slug is lower-case letters, digits, dots, dashes and underscores');
        return answerResult(await self.call('GET', `/product/connectors/${encodeURIComponent(slug)}.md`));
      }
      default:
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
  }
  return server;
}


class ArgumentError extends Error {}

function stringArg(args: Record<string, unknown>, name: string, max: number): string {
  const value = args[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > max) throw new ArgumentError(`${name} must be a string of 1-${max} characters`);
  return value;
}

function invalid(message: string, status = 400, code = 'validation_failed'): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ status, error: message, code }) }] };
}
