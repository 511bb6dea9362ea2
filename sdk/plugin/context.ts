/**
 * The `ctx` a plugin receives on every invocation. Each member is a capability: it exists
 * only when the manifest declares it and the operator granted it, and every call crosses the
 * sandbox boundary as a checked message. Identity (company, actor, run) is attached by the
 * host; nothing here lets a plugin choose whom it acts for.
 */
export interface InvocationInfo {
  id: string;
  kind: 'route' | 'route_batch' | 'tool' | 'job' | 'webhook' | 'event' | 'hook' | 'data' | 'action' | 'service' | 'validate_config';
  target: string;
  companyId: string | null;
  actor: { type: 'user' | 'agent' | 'system'; id: string; agentId: string | null };
  runId: string | null;
  /** For service calls: the plugin that called, and on whose behalf. */
  caller?: { plugin: string } | null;
  /** For service calls: the idempotency key the caller passed, if any (the host runs the service once per key). */
  idempotencyKey?: string | null;
}

export interface QueryResult<T> { rows: T[]; rowCount: number }

export interface DatabaseCapability {
  /** One statement, `$1`-style parameters, run in the plugin's own schema under its own role. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
}

export interface ActivityCapability {
  /** Written in the invocation's transaction, attributed to the invocation's actor and company. */
  record(entry: { action: string; entityType: string; entityId: string; details?: Record<string, unknown> }): Promise<void>;
}

/** A fetched response: header names lower-cased, the body as text (at most 5 MiB). */
export interface FetchResponse { status: number; headers: Record<string, string>; body: string; json<T = unknown>(): T }
export interface HttpCapability {
  /**
   * Only hosts (and ports) of the manifest's network allow-list; private, loopback and metadata
   * addresses are refused after DNS resolution, and every redirect hop is checked again.
   * Errors: `network_denied`, `address_denied`, `redirect_denied`, `fetch_timeout`, ...
   */
  fetch(url: string, init?: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number }): Promise<FetchResponse>;
}

export interface FolderEntry { name: string; kind: 'file' | 'directory'; size: number }
/**
 * Text files in the folders an operator mounted for the invocation's company. Paths are
 * relative and `/`-separated; `..`, absolute paths, backslashes, percent escapes and links
 * leading outside the folder are refused. Files are at most 5 MiB.
 */
export interface FoldersCapability {
  read(folderKey: string, path: string): Promise<string>;
  /** Creates missing parent directories; never writes through a symbolic link. */
  write(folderKey: string, path: string, content: string): Promise<void>;
  /** The folder itself when `path` is omitted; at most 1,000 entries, sorted by name. */
  list(folderKey: string, path?: string): Promise<FolderEntry[]>;
  exists(folderKey: string, path: string): Promise<boolean>;
}

export interface CompaniesCapability { get(companyId: string): Promise<Record<string, unknown> | null> }
export interface AgentsCapability {
  /** An agent of the company this call serves (redacted view); null for an unknown id and for another company's agent alike. */
  get(agentId: string): Promise<Record<string, unknown> | null>;
  /** The agents of the company this call serves (redacted view), oldest first. */
  list(): Promise<Array<Record<string, unknown>>>;
  pause(agentId: string, reason: string): Promise<{ paused: boolean; status: string }>;
  resume(agentId: string, reason?: string): Promise<{ resumed: boolean; status: string }>;
}
export interface RunsCapability {
  open(input: { agentId: string; invocationSource?: string; trigger?: string }): Promise<{ runId: string; token: string; tokenExpiresAt: string }>;
  close(runId: string, input: { status: 'succeeded' | 'failed' | 'cancelled' | 'timed_out'; reason?: string }): Promise<{ runId: string; status: string }>;
}
export interface SecretsCapability {
  /** The environment of a run of the agent: plain values plus decrypted references and env grants. */
  resolveEnvironment(agentId: string): Promise<Record<string, string>>;
}
export interface StreamsCapability {
  /**
   * Sends an event to the subscribers of GET /api/plugins/{key}/bridge/stream/{channel}, in the
   * scope of this call: the company it serves (`?companyId=`), or the instance when it serves none.
   * At most 7,000 bytes of JSON.
   */
  publish(channel: string, data: unknown): Promise<{ published: true }>;
}
/**
 * Kernel rows a budget domain keeps in step (budgets.write). Both run in the call's own
 * transaction and act only on the call's company and its agents.
 */
export interface BudgetsCapability {
  /** Month-to-date spend (calendar month UTC, `YYYY-MM`) of the company and of some of its agents; a report for an older month than the stored one is ignored. */
  reportMonthlySpend(report: { month: string; companyCents?: number; agents?: Array<{ agentId: string; cents: number }> }): Promise<void>;
  /** The `budgetMonthlyCents` of the company or of one of its agents. */
  setMonthlyBudget(change: { scope: 'company' | 'agent'; agentId?: string; cents: number }): Promise<{ updated: boolean }>;
}
/**
 * Pauses and resumes in the call's own transaction (agents.pause, companies.pause): they commit
 * or roll back with the plugin's writes, and each change is written to the activity log. A
 * resume lifts only a pause made with the same reason; an operator's own pause stays.
 */
export interface ScopesCapability {
  pauseAgent(agentId: string, reason: string): Promise<{ changed: boolean }>;
  resumeAgent(agentId: string, reason: string): Promise<{ changed: boolean }>;
  pauseCompany(reason: string): Promise<{ changed: boolean }>;
  resumeCompany(reason: string): Promise<{ changed: boolean }>;
}
export interface ServicesCapability {
  /**
   * Calls a service another plugin provides (declared under services.consumes). The input is
   * checked against the service's inputSchema, the result against its outputSchema. The
   * service commits in the provider's own transaction: pass an idempotencyKey when this call
   * may be retried, and a retry gets the first run's result without running it again.
   */
  call<T = unknown>(plugin: string, service: string, input?: unknown, options?: { idempotencyKey?: string }): Promise<T>;
}

/** A blob's metadata; its bytes stay in the kernel's blob store. */
export interface BlobHandle {
  id: string;
  companyId: string;
  /** `kernel` or the key of the plugin that owns it. */
  owner: string;
  contentType: string;
  byteSize: number;
  sha256: string;
  filename: string | null;
  createdAt: string;
}
/**
 * Blobs of the company this call serves that the plugin owns or was handed (an upload to one
 * of its routes, a link from another plugin). Any other id, another company's or another
 * plugin's included, is not found (`get` answers null, the others 404 `blob_not_found`).
 */
export interface BlobsCapability {
  get(blobId: string): Promise<BlobHandle | null>;
  /** The blob as UTF-8 text; at most 512 KiB (413 `blob_too_large` beyond). */
  readText(blobId: string): Promise<string>;
  /** A new blob owned by the plugin (text/* or JSON types, at most 512 KiB); needs blobs.write. */
  createText(input: { text: string; contentType?: string; filename?: string }): Promise<BlobHandle>;
  /** Hands the blob to another plugin of the same company; needs blobs.write. */
  link(blobId: string, pluginKey: string): Promise<{ linked: true }>;
  /** The owner deletes the blob; a plugin it was handed to lets go of its link. Needs blobs.write. */
  delete(blobId: string): Promise<{ deleted: boolean }>;
}

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface PluginContext {
  invocation: InvocationInfo;
  /** The plugin's instance configuration, validated against its config schema. */
  config: Record<string, unknown>;
  log: Logger;
  db?: DatabaseCapability;
  activity?: ActivityCapability;
  http?: HttpCapability;
  folders?: FoldersCapability;
  companies?: CompaniesCapability;
  agents?: AgentsCapability;
  runs?: RunsCapability;
  secrets?: SecretsCapability;
  services?: ServicesCapability;
  streams?: StreamsCapability;
  budgets?: BudgetsCapability;
  scopes?: ScopesCapability;
  blobs?: BlobsCapability;
}

export interface RouteRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string>;
  companyId: string | null;
  /** For a route declared `upload`: the stored file's metadata (the plugin owns the blob). */
  upload?: BlobHandle;
}

/** What a route declared `download` answers: the host streams the blob with safe headers. */
export interface BlobDownload { blob: string; disposition?: 'attachment' | 'inline'; filename?: string }

/** One call of a batched route, as a batch handler receives it: its request and its own ctx. */
export interface BatchCall { request: RouteRequest; ctx: PluginContext }

export interface RouteResponse { status?: number; body?: unknown; headers?: Record<string, string> }
export interface WebhookRequest { headers: Record<string, string>; body: string; verified: boolean }
