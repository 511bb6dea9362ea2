import type { RouteTable } from '../host/contributions/routes.ts';
import type { Actor } from '../auth/actor.ts';

/**
 * The core work tools of `POST /api/mcp`: each is one HTTP route of the API, called through the
 * kernel's own request path with the caller's credentials (self-request.ts), so that a tool
 * answers exactly what the route answers. Input schemas are the route's own: its path
 * parameters plus the properties of the body (or query) schema the route declares in its
 * plugin's manifest. Names never contain a dot; plugin tools always do (`<plugin>.<tool>`), so
 * no plugin can shadow a core tool.
 */
export interface CoreTool {
  name: string;
  description: string;
  method: 'GET' | 'POST' | 'PATCH' | 'PUT';
  /** The route's path, parameters as `:name`. */
  path: string;
  /** Kernel routes (not a plugin's): who may call them, as the route declares. */
  kernelAuth?: 'agent';
  /** Descriptions of the path parameters. */
  params?: Record<string, string>;
  /**
   * A path parameter naming the company, optional in the tool's input: left out, it is the
   * caller's company (an agent's own; for a board caller, the endpoint's `?companyId=`). The
   * route checks access to the company named either way, as for a direct request.
   */
  companyParam?: string;
}

export const CORE_TOOLS: readonly CoreTool[] = [
  { name: 'me', description: 'The calling agent: its identity, company, role, chain of command and access.', method: 'GET', path: '/api/agents/me', kernelAuth: 'agent' },
  { name: 'inbox', description: "The calling agent's inbox: the open issues assigned to it, most urgent first.", method: 'GET', path: '/api/agents/me/inbox-lite' },
  { name: 'issue_get', description: 'One issue by id or identifier (for example ENG-12), with its ancestors and project.', method: 'GET', path: '/api/issues/:issueId', params: { issueId: 'Issue id (uuid) or identifier such as ENG-12' } },
  { name: 'issue_update', description: 'Change an issue: status, priority, title, description, assignee and other fields; a comment may go along.', method: 'PATCH', path: '/api/issues/:issueId', params: { issueId: 'Issue id (uuid) or identifier' } },
  { name: 'issue_checkout', description: 'Take an issue for the calling agent: assigns it and marks it in progress; fails with 409 when another agent holds it.', method: 'POST', path: '/api/issues/:issueId/checkout', params: { issueId: 'Issue id (uuid) or identifier' } },
  { name: 'issue_release', description: "Give an issue back: clears the caller's checkout so another agent can take it.", method: 'POST', path: '/api/issues/:issueId/release', params: { issueId: 'Issue id (uuid) or identifier' } },
  { name: 'comment_list', description: 'The comments of an issue, oldest first.', method: 'GET', path: '/api/issues/:issueId/comments', params: { issueId: 'Issue id (uuid) or identifier' } },
  { name: 'comment_add', description: 'Add a comment to an issue.', method: 'POST', path: '/api/issues/:issueId/comments', params: { issueId: 'Issue id (uuid) or identifier' } },
  { name: 'document_list', description: 'The documents of an issue (plan and others), without their bodies.', method: 'GET', path: '/api/issues/:issueId/documents', params: { issueId: 'Issue id (uuid) or identifier' } },
  { name: 'document_get', description: 'One document of an issue by key, with its body.', method: 'GET', path: '/api/issues/:issueId/documents/:key', params: { issueId: 'Issue id (uuid) or identifier', key: 'Document key, for example plan' } },
  {
    name: 'cost_report', description: "The company's spend: total cost in cents over a range (default: the current month), its monthly budget and how much of it is used.",
    method: 'GET', path: '/api/companies/:companyId/costs/summary', companyParam: 'companyId',
    params: { companyId: "Company id; defaults to the caller's company" },
  },
  { name: 'document_put', description: 'Create or replace a document of an issue (a new revision).', method: 'PUT', path: '/api/issues/:issueId/documents/:key', params: { issueId: 'Issue id (uuid) or identifier', key: 'Document key, for example plan' } },
];

/** A core tool as the caller may use it now: its route is served and admits the caller. */
export interface AvailableCoreTool { tool: CoreTool; inputSchema: Record<string, unknown>; bodyFields: string[]; queryFields: string[]; idempotent: boolean }

/**
 * The input of a tool whose route takes an Idempotency-Key: sent as that header, never in the
 * body, so an agent that retries a call after a lost answer writes nothing twice.
 */
export const IDEMPOTENCY_INPUT = 'idempotencyKey';
const IDEMPOTENCY_INPUT_SCHEMA = {
  type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$',
  description: 'Any unique string (a uuid): a retry of this call with the same key and input answers what the first call created, and writes nothing again.',
};

type Schema = { type?: unknown; properties?: Record<string, unknown>; required?: string[] };

/**
 * The core tools for this caller: a tool whose route no enabled plugin serves is not offered,
 * nor one whose route refuses the caller's kind (agent-only routes to a board key).
 */
export function availableCoreTools(host: { readonly routes: Pick<RouteTable, 'all'> }, actor: Actor | null): AvailableCoreTool[] {
  const available: AvailableCoreTool[] = [];
  for (const tool of CORE_TOOLS) {
    let body: Schema | undefined;
    let query: Schema | undefined;
    let auth: string;
    let idempotent = false;
    if (tool.kernelAuth) {
      auth = tool.kernelAuth;
    } else {
      const served = host.routes.all().find((route) => route.route.method === tool.method && route.fullPath === tool.path);
      if (!served) continue;
      auth = served.route.auth;
      body = served.route.body as Schema | undefined;
      query = served.route.query as Schema | undefined;
      idempotent = served.route.idempotencyKey === true;
    }
    if (actor && !admits(auth, actor)) continue;
    const params = Object.keys(tool.params ?? {});
    const properties: Record<string, unknown> = {};
    for (const name of params) properties[name] = { type: 'string', minLength: 1, description: tool.params![name] };
    const extra = tool.method === 'GET' ? query : body;
    for (const [name, schema] of Object.entries(extra?.properties ?? {})) if (!params.includes(name)) properties[name] = schema;
    if (idempotent && properties[IDEMPOTENCY_INPUT] === undefined) properties[IDEMPOTENCY_INPUT] = IDEMPOTENCY_INPUT_SCHEMA;
    const required = [...params.filter((name) => name !== tool.companyParam), ...(extra?.required ?? []).filter((name) => !params.includes(name))];
    available.push({
      tool,
      inputSchema: { type: 'object', properties, ...(required.length ? { required } : {}) },
      bodyFields: tool.method === 'GET' ? [] : Object.keys(body?.properties ?? {}),
      queryFields: tool.method === 'GET' ? Object.keys(query?.properties ?? {}) : [],
      idempotent,
    });
  }
  return available;
}

function admits(auth: string, actor: Actor): boolean {
  if (auth === 'agent') return actor.kind === 'agent';
  if (auth === 'board' || auth === 'instance_admin') return actor.kind === 'board';
  return actor.kind === 'agent' || actor.kind === 'board';
}
