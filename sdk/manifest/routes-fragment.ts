import { identifier, notPrototypeMember, schemaObject } from './fragment-parts.ts';
import { RAW_CONTENT_TYPES } from '../plugin/answers.ts';

/** The manifest's `routes`: HTTP routes, their auth, parameters, bodies, answers and proxying. */
export const routesFragment = {
  type: 'array', maxItems: 200,
  description: 'HTTP routes, mounted under /api/plugins/{pluginKey} unless absolute.',
  items: {
    type: 'object', additionalProperties: false, required: ['key', 'method', 'path', 'auth'],
    properties: {
      key: { ...identifier, description: 'Handler key in definePlugin({ routes }).' },
      method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], description: 'HTTP method.' },
      path: { type: 'string', pattern: '^/[A-Za-z0-9_\\-./:{}]*$', maxLength: 300, description: 'Path; parameters as :name or {name}.' },
      absolute: { type: 'boolean', description: 'Serve the path as given (needs http.routes.absolute).' },
      auth: { enum: ['board', 'agent', 'any', 'none', 'instance_admin'], description: 'Who may call it; checked before the isolate runs.' },
      companyParam: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9]*$', description: 'Path parameter naming the company; company access is checked by the host.' },
      agentParam: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9]*$', description: "Path parameter naming an agent; the host answers 404 for an unknown agent and checks access to the agent's company, which becomes the call's company." },
      runParam: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9]*$', description: "Path parameter naming a run of the run ledger: when the run exists and the caller may reach its company, that company becomes the call's company; an unknown run and a run of a company the caller cannot reach both reach the handler with no company." },
      entityParam: {
        type: 'object', additionalProperties: false, required: ['param', 'entity'],
        description: "Path parameter naming a row of one of the plugin's database.entities: the host answers 404 for an unknown id, checks access to the row's company, which becomes the call's company, and hands the handler the row's id.",
        properties: {
          param: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9]*$', description: 'The path parameter.' },
          entity: { type: 'string', pattern: '^[a-z][a-z0-9_]*$', maxLength: 64, ...notPrototypeMember, description: 'The entity type, as declared under database.entities.' },
        },
      },
      authCodes: {
        type: 'object', additionalProperties: false, minProperties: 1,
        description: "Codes the host's own refusals of this route answer with, where the route's API names its own: `unauthenticated` for the 401 of a caller without credentials, `otherCompany` for the 403 of an agent key of another company. Status and message stay the host's.",
        properties: {
          unauthenticated: { type: 'string', pattern: '^[a-z][a-z0-9_]*$', maxLength: 64 },
          otherCompany: { type: 'string', pattern: '^[a-z][a-z0-9_]*$', maxLength: 64 },
        },
      },
      companyField: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9]*$', description: "Query parameter (GET) or top-level body field naming the company, for a route whose path names none: the host checks it like companyParam (unknown 404, another company's caller 403); an agent that omits it acts in its own company, a board caller must give it (400 company_required)." },
      idempotencyKey: { type: 'boolean', description: 'The route takes an Idempotency-Key header (a create a client may retry): documented as a header parameter of the operation. The plugin keeps the key (createOnce of @keel/sdk/plugin).' },
      agentBodyField: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9]*$', description: "Top-level body field naming an agent that must belong to the call's company; the host answers 404 agent_not_found otherwise, before the isolate runs." },
      body: { ...schemaObject, description: 'Schema of the JSON body, validated before the isolate runs.' },
      query: { ...schemaObject, description: 'Schema of the query string (values coerced), validated before the isolate runs.' },
      transactional: { type: 'boolean', description: 'Run in one database transaction (default: true unless GET).' },
      readOnly: { type: 'boolean', description: 'Changes nothing: each statement runs alone and read-only (no transaction for the whole call) and no activity is written (default: true for GET).' },
      perCompany: {
        type: 'object', additionalProperties: false,
        description: "An instance-admin route over every company: the host calls the handler once per company that is not archived (each call serving that company alone, in its own transaction) and answers the answers merged: arrays concatenated, objects merged key by key, the numbers at the sum paths added up, anything else from the first. With no company it calls once with none. Needs auth instance_admin and no company of its own (companyParam, agentParam, entityParam, runParam), upload, download, batch or stream.",
        properties: {
          sum: { type: 'array', maxItems: 50, uniqueItems: true, items: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$', maxLength: 200 }, description: 'Dotted paths of the numbers added up across companies (counts.findings).' },
          select: { ...identifier, description: 'Key of a handler in the plugin\'s routes the host calls first, once, read-only and serving no company, with the same request: it answers the ids of the companies the route has work in, and the route is called only in those (an idle company costs nothing).' },
        },
      },
      batch: {
        type: 'object', additionalProperties: false, description: 'Group commit: concurrent calls share one transaction (a savepoint each) and one commit.',
        properties: {
          maxItems: { type: 'integer', minimum: 1, maximum: 500, description: 'Most calls in one batch (default 100).' },
          maxInFlight: { type: 'integer', minimum: 1, maximum: 4, description: 'Batches of the route in flight at once (default 2). 1 suits set-based batch handlers whose batches serialise on the same rows anyway.' },
        },
      },
      upload: {
        type: 'object', additionalProperties: false, required: ['field', 'contentTypes'],
        description: 'The route takes multipart/form-data: the host streams the file part into the blob store and hands the handler request.upload (needs blobs.write; POST or PUT under a company).',
        properties: {
          field: { ...identifier, description: 'Name of the multipart file part.' },
          maxBytes: { type: 'integer', minimum: 1, description: 'Largest accepted file; the instance limit (limits.attachmentBytes) applies when smaller.' },
          contentTypes: { type: 'array', minItems: 1, maxItems: 50, uniqueItems: true, items: { type: 'string', pattern: '^[a-z0-9][a-z0-9.+-]*/([a-z0-9][a-z0-9.+-]*|\\*)$' }, description: 'Declared part types accepted (type/subtype or type/*).' },
        },
      },
      download: { type: 'boolean', description: 'The handler answers { blob, disposition?, filename? } and the host streams that blob (needs blobs.read; GET).' },
      successStatus: { type: 'integer', minimum: 200, maximum: 299, description: 'Status of a successful answer when the handler sets none.' },
      response: {
        type: 'object', additionalProperties: false, minProperties: 1,
        description: 'Answers besides one JSON value: raw text bodies or server-sent events (docs/plugins/answers.md). Errors are always JSON.',
        properties: {
          contentTypes: {
            type: 'array', minItems: 1, maxItems: RAW_CONTENT_TYPES.length, uniqueItems: true,
            items: { enum: [...RAW_CONTENT_TYPES] },
            description: 'Raw text types a string body may be sent as (the first by default). Types a browser would render or run (HTML, SVG, XML, JavaScript, CSS, PDF) are not offered.',
          },
          stream: { enum: ['sse'], description: 'The handler may answer server-sent events (respondEvents): one-shot, or held on a channel of the request\'s company.' },
          maxStreams: { type: 'integer', minimum: 1, maximum: 100, description: 'Held streams of the plugin per company (or the instance) one Keel process keeps open; more are refused with 429 (default 20).' },
        },
      },
      proxy: {
        type: 'object', additionalProperties: false,
        description: 'The route may answer respondProxy: the kernel forwards the raw body to a model provider with a key from the vault, streams and meters the answer (POST only; needs http.proxy). The kernel reads the body itself: the JSON limit and body schema do not apply.',
        properties: {
          credentialHeaders: { type: 'array', maxItems: 4, uniqueItems: true, items: { type: 'string', pattern: '^[a-z][a-z0-9-]*$', maxLength: 64, not: { enum: ['authorization', 'cookie', 'host', 'content-type', 'content-length'] } }, description: "Headers besides Authorization: Bearer carrying the caller's Keel credential (run token or agent key), tried in order when Authorization has none." },
          bodyFields: { type: 'array', maxItems: 16, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z_][A-Za-z0-9_]*$', ...notPrototypeMember }, description: 'Top-level JSON body fields handed to the handler as request.body; the rest never crosses into the isolate.' },
          maxBodyBytes: { type: 'integer', minimum: 1024, maximum: 67108864, description: 'Largest request body (default 32 MiB, at most 64 MiB); larger is refused with 413.' },
        },
      },
      timeoutMs: { type: 'integer', minimum: 10, maximum: 120000, description: 'Wall-clock deadline of one call of this route (at most 120 s); defaults to limits.callTimeoutMs.' },
      description: { type: 'string', maxLength: 1000, description: 'Shown in the API reference.' },
    },
  },
} as const;
