/**
 * The `ctx` a plugin receives on every invocation. Each member is a capability: it exists
 * only when the manifest declares it and the operator granted it, and every call crosses the
 * sandbox boundary as a checked message. Identity (company, actor, run) is attached by the
 * host; nothing here lets a plugin choose whom it acts for.
 */
export interface InvocationInfo {
  id: string;
  kind: 'route' | 'tool' | 'job' | 'webhook' | 'event' | 'hook' | 'data' | 'action' | 'service' | 'validate_config';
  target: string;
  companyId: string | null;
  actor: { type: 'user' | 'agent' | 'system'; id: string; agentId: string | null };
  runId: string | null;
  /** For service calls: the plugin that called, and on whose behalf. */
  caller?: { plugin: string } | null;
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

export interface FetchResponse { status: number; headers: Record<string, string>; body: string; json<T = unknown>(): T }
export interface HttpCapability {
  /** Only hosts of the manifest's network allow-list; private and metadata addresses are refused. */
  fetch(url: string, init?: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number }): Promise<FetchResponse>;
}

export interface FolderEntry { name: string; kind: 'file' | 'directory'; size: number }
export interface FoldersCapability {
  read(folderKey: string, path: string): Promise<string>;
  write(folderKey: string, path: string, content: string): Promise<void>;
  list(folderKey: string, path?: string): Promise<FolderEntry[]>;
  exists(folderKey: string, path: string): Promise<boolean>;
}

export interface CompaniesCapability { get(companyId: string): Promise<Record<string, unknown> | null> }
export interface AgentsCapability {
  get(agentId: string): Promise<Record<string, unknown> | null>;
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
  /** Sends an event to the plugin's UI subscribers of GET /api/plugins/{key}/bridge/stream/{channel}. */
  publish(channel: string, data: unknown): Promise<{ delivered: number }>;
}
export interface ServicesCapability { call<T = unknown>(plugin: string, service: string, input?: unknown): Promise<T> }

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
}

export interface RouteRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string>;
  companyId: string | null;
}

export interface RouteResponse { status?: number; body?: unknown; headers?: Record<string, string> }
export interface WebhookRequest { headers: Record<string, string>; body: string; verified: boolean }
