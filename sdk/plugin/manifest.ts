/**
 * The plugin manifest (`plugin.json`): static data the host reads before running a line of
 * plugin code. Its JSON schema lives in sdk/manifest/ and is published at
 * `GET /api/plugins/manifest-schema`; these types mirror it.
 */
import type { RawContentType } from './answers.ts';

export type JsonSchema = Record<string, unknown>;

/**
 * A capability the plugin asks for, with the reason shown to the operator on enable. The id is
 * one of the registry's (sdk/capabilities CapabilityId): the manifest's JSON schema enumerates
 * them, and this type stays free of the registry, whose declarations read manifests.
 */
export interface CapabilityRequest {
  id: string;
  reason: string;
}

export type RouteAuth = 'board' | 'agent' | 'any' | 'none' | 'instance_admin';

/**
 * What a route may answer besides one JSON value (see `@keel/sdk/plugin` respondEvents and
 * docs/plugins/answers.md). Errors are always the JSON error body.
 */
export interface RouteResponseManifest {
  /**
   * Raw text types the handler may answer with a string body; the first is used when the
   * answer names none (`respond(200, text, { 'content-type': ... })` picks another declared one).
   */
  contentTypes?: RawContentType[];
  /** The handler may answer server-sent events (`respondEvents`), one-shot or held on a channel. */
  stream?: 'sse';
  /** Held streams of this plugin per company (or the instance) a Keel process keeps open before it refuses more (429). Default 20, at most 100. */
  maxStreams?: number;
}

/**
 * A route that may forward its request to a model provider (`respondProxy`, needs http.proxy;
 * POST only). The kernel reads the body itself (raw, up to maxBodyBytes), hands the isolate only
 * `bodyFields`, and resolves the caller from Authorization or the credential headers.
 */
export interface RouteProxyManifest {
  /** Headers besides `Authorization: Bearer` that carry the caller's Keel credential (run token or agent key), tried in order when Authorization has none: e.g. ['x-api-key'], ['x-goog-api-key']. Lower-case names, at most 4. */
  credentialHeaders?: string[];
  /** Top-level fields of the JSON body handed to the isolate as `request.body` (the rest never crosses); the raw body is kept for forwarding. At most 16. */
  bodyFields?: string[];
  /** Largest request body, default 32 MiB, at most 64 MiB (the kernel's JSON limit does not apply). */
  maxBodyBytes?: number;
}

/**
 * A table of the plugin whose rows belong to companies and are named in paths: `id` (uuid, the
 * primary key) or, when declared, an alias column (an issue's `ACME-12`).
 */
export interface EntityManifest {
  /** Entity name used by routes' `entityParam` and in the 404 text (`issue` gives `Issue not found`). */
  type: string;
  table: string;
  /** Column holding the row's company id (default `company_id`). */
  companyColumn?: string;
  /** Unique text column a path may give instead of the id; matched upper-cased when `aliasUpperCase`. */
  aliasColumn?: string;
  aliasUpperCase?: boolean;
  /**
   * Column set on rows the plugin hides (a timestamp, `hidden_at`): the company activity feed
   * leaves out entries about them (entityType this type, entityId the row's id).
   */
  hiddenColumn?: string;
}

export interface RouteManifest {
  key: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Relative to `/api/plugins/{pluginKey}` unless `absolute` is true. Parameters as `:name`. */
  path: string;
  absolute?: boolean;
  auth: RouteAuth;
  /** The path parameter that names the company; the host checks company access before the isolate runs. */
  companyParam?: string;
  /** The path parameter that names an agent: unknown agents get 404, and the agent's company becomes the call's company (access checked). */
  agentParam?: string;
  /**
   * The path parameter that names a run of the run ledger. When the run exists and the caller
   * may reach its company, that company becomes the call's company (and the handler gets the
   * run's id in lower case); an unknown or malformed id and a run of a company the caller cannot
   * reach alike reach the handler with no company (`companyId` null), so that it answers as for
   * an unknown run and the caller learns nothing about other companies' runs.
   */
  runParam?: string;
  /**
   * The path parameter that names a row of one of the plugin's entities (`database.entities`):
   * the host finds the row's company (404 `<Entity> not found` for an unknown id), checks the
   * caller's access to it, makes it the call's company and hands the handler the row's id.
   */
  entityParam?: { param: string; entity: string };
  /**
   * Codes the host's own refusals of this route answer with, where the route's API names its
   * own: `unauthenticated` replaces `unauthorized` on the 401 of a caller without credentials,
   * `otherCompany` replaces `company_access_denied` on the 403 of an agent key of another company.
   */
  authCodes?: { unauthenticated?: string; otherCompany?: string };
  /**
   * An instance-admin route over every company: the host invokes the handler once per company
   * that is not archived, each call serving that company alone (its own transaction, activity
   * and company-scoped capabilities), and answers the answers merged: arrays concatenated,
   * objects merged key by key, the numbers at the `sum` paths (dotted: `counts.findings`) added
   * up, any other value from the first answer. With no company at all the handler is called
   * once with `companyId` null, so the answer keeps its shape. `select`: the key of a handler in
   * the plugin's routes the host calls first, once, read-only and serving no company, with the
   * same request; it answers the ids of the companies the route has work in (an array), and the
   * host calls the route only in those (never in a company it did not choose itself): an
   * instance of many idle companies then costs one call, not one per company.
   */
  perCompany?: { sum?: string[]; select?: string };
  /** A top-level body field naming an agent that must belong to the call's company (404 `agent_not_found` otherwise). */
  agentBodyField?: string;
  /**
   * The route takes an `Idempotency-Key` header: a create a client may retry. The OpenAPI
   * documents the header; the plugin keeps the key with what it creates (`createOnce`).
   */
  idempotencyKey?: boolean;
  /**
   * Query parameter (GET) or top-level body field naming the company, for a route whose path
   * names none: checked by the host like companyParam; an agent omitting it acts in its own company.
   */
  companyField?: string;
  body?: JsonSchema;
  query?: JsonSchema;
  /** Defaults to true for every method but GET. */
  transactional?: boolean;
  /**
   * A route that changes nothing (GET by default; also POST routes such as echo or search):
   * each of its statements runs alone and read-only (no transaction spans the call),
   * and it writes no activity entry.
   */
  readOnly?: boolean;
  /**
   * Group commit: concurrent calls of this route run in one transaction (a savepoint each; a
   * failing call is rolled back alone) and are answered after one shared commit.
   */
  batch?: { maxItems?: number; maxInFlight?: number };
  /**
   * The route takes multipart/form-data: the host streams the part named `field` into the blob
   * store (size limit, type allow-list, sha256) and the handler receives `request.upload`, the
   * blob's metadata, never its bytes. Needs blobs.write; POST or PUT under a company.
   */
  upload?: { field: string; maxBytes?: number; contentTypes: string[] };
  /** The handler answers `{ blob, disposition?, filename? }` and the host streams the blob. Needs blobs.read; GET. */
  download?: boolean;
  /** HTTP status of a successful answer when the handler does not set one. */
  successStatus?: number;
  /** Raw text or server-sent event answers the route may give; JSON only when absent. */
  response?: RouteResponseManifest;
  /** The route may answer `respondProxy` (a model provider call the kernel forwards and meters). POST only; needs http.proxy. */
  proxy?: RouteProxyManifest;
  /** Wall-clock deadline of one call (at most 120,000 ms); defaults to `limits.callTimeoutMs`. */
  timeoutMs?: number;
  description?: string;
}

export interface ToolManifest {
  key: string;
  description: string;
  inputSchema: JsonSchema;
  /** A tool that changes nothing: it runs as a read-only route does (no transaction, no activity entry). */
  readOnly?: boolean;
}
export interface JobManifest {
  key: string;
  schedule?: string;
  description?: string;
  /**
   * Run the job once per company (every company not archived), each call serving that company
   * alone. A job without it serves no company, and company-scoped capabilities refuse it.
   */
  perCompany?: boolean;
  /** Wall-clock deadline of one run (at most 900,000 ms = 15 minutes); defaults to `limits.callTimeoutMs`. */
  timeoutMs?: number;
  /** Enqueued runs of this job at once, across every Keel process (default 1, at most 16). */
  concurrency?: number;
  /** Retries of a failed enqueued run, with exponential backoff (default 2, at most 10). */
  retryLimit?: number;
  /** Schema of the payload of `ctx.jobs.enqueue`; checked when it is enqueued and again before it runs. */
  payloadSchema?: JsonSchema;
}
export interface WebhookManifest {
  key: string;
  description?: string;
  /** How deliveries are authenticated; the host verifies before the body is parsed. */
  signature?: { scheme: 'hmac-sha256'; header: string; secretConfigKey: string; timestampHeader?: string; toleranceSeconds?: number };
}
/**
 * A subscription. `event` is a kernel event (company.*, agent.*) or an event another plugin
 * publishes (`<pluginKey>.<name>`). after_commit: a durable subscriber (events.subscribe),
 * delivered at least once, in order per entity; in_transaction: a read-only validator that may
 * veto a kernel change before it commits (events.hooks).
 */
export interface EventManifest {
  event: string;
  mode: 'after_commit' | 'in_transaction';
  /**
   * after_commit on a kernel event only: an API request whose own change emitted the event
   * (a company or agent created or updated through the API) answers once this subscriber has
   * handled it, at most its call deadline later: what the plugin keeps of the change is
   * readable from the answer on. For derived state a client reads right after the change.
   */
  awaited?: boolean;
}
/** An event the plugin publishes with ctx.events.publish (events.publish); `name` starts with the plugin's key. */
export interface PublishedEventManifest { name: string; description?: string; schema: JsonSchema }
export interface UiSlotManifest { slot: string; key: string; label?: string; order?: number; dataKey?: string }
export interface UiLauncherManifest { key: string; label: string; placement: string; action?: string }
export interface FolderManifest {
  key: string; access: 'read' | 'readWrite'; description?: string;
  /** Job (declared under `jobs`) the host runs in the mount's company when files change on disk. */
  onChange?: { job: string };
}
export interface ServiceManifest {
  key: string;
  description?: string;
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  callerRequires?: string[];
  /** The service changes nothing: it runs without a transaction of its own, in read-only mode (a decision asked before every write). */
  readOnly?: boolean;
  /** The plugin whose contract this service implements: it may call it without naming this provider (services.consumes {contract}). */
  contractOf?: string;
}

/** One provider's service (`plugin`, `service`), or a contract of this plugin's own that any provider may implement (`contract`). */
export type ServiceConsumption = { plugin: string; service: string; contract?: undefined } | { contract: string; plugin?: undefined; service?: undefined };

export interface PluginManifest {
  key: string;
  version: string;
  sdkApiVersion: 1;
  displayName: string;
  description?: string;
  entry: string;
  tag?: 'first-party' | 'example';
  experimental?: boolean;
  /**
   * Experimental instance settings (`/api/instance/settings/experimental`) the plugin's routes
   * need on: the console says so on the plugin's card, with a switch that turns each on.
   */
  requiresExperimentalSettings?: string[];
  /** `package`: shipped in the checkout but installed only on request, by its package name. */
  distribution?: 'bundled' | 'package';
  capabilities: CapabilityRequest[];
  database?: {
    namespace: string;
    migrations?: string;
    /**
     * The migrations create functions or procedures, run DO blocks or comment on objects. Their
     * source and comments are readable by every role of the database, other plugins included;
     * without this, such migrations are refused.
     */
    functions?: boolean;
    /** Tables whose rows routes name by id (`entityParam`): the host reads their company before the isolate runs. */
    entities?: EntityManifest[];
  };
  routes?: RouteManifest[];
  tools?: ToolManifest[];
  jobs?: JobManifest[];
  webhooks?: WebhookManifest[];
  events?: EventManifest[];
  publishedEvents?: PublishedEventManifest[];
  ui?: { slots?: UiSlotManifest[]; launchers?: UiLauncherManifest[]; pages?: Array<{ key: string; title: string; path: string }> };
  config?: { schema: JsonSchema };
  folders?: FolderManifest[];
  network?: { allow: string[] };
  services?: { provides?: ServiceManifest[]; consumes?: ServiceConsumption[] };
  /** Kernel points answered by one of this plugin's services (kernel.points; sdk/manifest/kernel-points.ts). */
  kernelPoints?: Array<{ point: string; service: string; adapterTypes?: string[] }>;
  /** This plugin's part of a company package (company.portability; docs/api/portability.md). */
  portability?: { exportService: string; importService: string; after?: string[] };
  limits?: { memoryMb?: number; callTimeoutMs?: number; maxConcurrentCalls?: number };
  /** Resources the host makes for each company while the plugin is enabled (agents.managed). */
  managed?: { agents?: ManagedAgentManifest[]; projects?: Array<{ key: string; name: string; description?: string }>; skills?: Array<{ slug: string; name: string; description?: string }>;
    routines?: Array<{ key: string; agentKey: string; title: string; intervalSec: number }> };
}
/** An agent the host makes and keeps for each company while the plugin is enabled. */
export interface ManagedAgentManifest { key: string; name: string; role?: string; title?: string; capabilities?: string; adapterType?: string; provision?: 'on_enable' | 'on_demand' }
