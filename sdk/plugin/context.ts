import type { CapabilityId, PluginCapabilities } from '../capabilities/index.ts';
import type { BlobHandle } from '../capabilities/blobs.ts';
import type { JobDeclarations, JobsCapability, UntypedJobs } from '../capabilities/jobs.ts';
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
  /**
   * True when `runId` is the run of the calling agent's run token (checked live by the kernel);
   * false when it is only the `X-Service-Run-Id` header a caller sent. The kernel has checked
   * that header names a live run of the calling agent (for a board user, of a company it
   * reaches), but an agent key can name its agent's run without being that run's process.
   * A limit kept per run must count only verified runs.
   */
  runVerified?: boolean;
  /** For service calls: the plugin that called, and on whose behalf. */
  caller?: { plugin: string } | null;
  /** For service calls: the idempotency key the caller passed, if any (the host runs the service once per key). */
  idempotencyKey?: string | null;
  /**
   * For event deliveries (kind 'event'): the event being delivered. Delivery is at least once:
   * the same event can arrive again (after a crash, a timeout, a retry), so handlers must be
   * idempotent by `event.id` (for example, record it with `on conflict do nothing`).
   */
  event?: DeliveredEvent | null;
  /**
   * For job calls: the run (plugin_job_runs) this call is, and for an enqueued job its queue id
   * and attempt (1 for the first). Progress reported through `ctx.progress` lands on the run.
   */
  job?: { runId: string; jobId: string | null; attempt: number } | null;
}

/** An event as its subscriber receives it (the payload is the handler's first argument). */
export interface DeliveredEvent {
  /** Stable across redeliveries: the key to be idempotent by. */
  id: string;
  name: string;
  /** 'kernel', or the key of the plugin that published it. */
  publisher: string;
  companyId: string | null;
  /** Events of one entity arrive in the order their writers committed. */
  entityType: string;
  entityId: string;
  occurredAt: string;
  /** 1 on the first delivery, more on retries. */
  attempt: number;
}


export type { QueryResult, DatabaseCapability } from '../capabilities/database.ts';
export type { ActivityCapability, ActivityEntry, ActivityFilter, ActivityReadCapability } from '../capabilities/activity.ts';
export type { FetchResponse, HttpCapability, HttpProxyCapability, ProxyTargetVerdict } from '../capabilities/http.ts';
export type { FolderChange, FolderChanges, FolderEntry, FoldersCapability } from '../capabilities/folders.ts';
export type {
  CompaniesCapability, CompaniesPauseCapability, AgentsReadCapability, AgentsPauseCapability, HoldAnswer, BudgetsCapability,
  IssueNumber, IssueNumberRange, IssueNumbersCapability, ApprovalsReadCapability, ApprovalFilter, ApprovalStatus, AgentConfigView,
} from '../capabilities/kernel-data.ts';
export type { RunsOpenCapability, RunsCloseCapability, RunsReadCapability, RunSummary, SecretsCapability } from '../capabilities/runs.ts';
export type { SecretsStoreCapability } from '../capabilities/secrets-store.ts';
export type { ServicesCapability, StreamsCapability } from '../capabilities/services.ts';
export type { ActorFacts, AgentFacts, HeldGrant, PrincipalsCapability } from '../capabilities/principals.ts';

export type { EnqueueOptions, JobDeclaration, JobDeclarations, JobPayloadOf, JobsCapability, ProgressCapability, UntypedJobs } from '../capabilities/jobs.ts';
export type { EventsCapability } from '../capabilities/events.ts';

export type { BlobHandle, BlobsCapability } from '../capabilities/blobs.ts';
export type { CatalogCapability, CatalogPlugin, CatalogRoute, CatalogTool, InstanceCatalog } from '../capabilities/catalog.ts';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** What every call's `ctx` has, whatever the plugin was granted. */
export interface BaseContext {
  invocation: InvocationInfo;
  /** The plugin's instance configuration, validated against its config schema. */
  config: Record<string, unknown>;
  log: Logger;
}

/**
 * The `ctx` of a plugin granted `Granted`: those capabilities' members are present and typed
 * (a plugin.json declaring `database.namespace.write` gives `ctx.db` through the `Context` of
 * its `plugin.gen.ts`, which `keel plugin build` writes).
 * Without a list, every member is optional: the host builds only what was granted.
 * `Jobs` are the plugin's jobs (the `Jobs` of its plugin.gen.ts): `ctx.jobs.enqueue` takes
 * their keys and payloads; without them, any key and payload.
 */
export type PluginContext<Granted extends CapabilityId | undefined = undefined, Jobs extends JobDeclarations = UntypedJobs> = BaseContext & WithJobs<
  [Granted] extends [CapabilityId] ? PluginCapabilities<Granted> : Partial<AllCapabilities>, Jobs>;

type AllCapabilities = PluginCapabilities<CapabilityId>;

/** `ctx.jobs` typed by the plugin's jobs, where it is present (or optional). */
type WithJobs<Ctx, Jobs extends JobDeclarations> = Ctx extends { jobs?: JobsCapability }
  ? { [Member in keyof Ctx]: Member extends 'jobs' ? JobsCapability<Jobs> : Ctx[Member] }
  : Ctx;

export interface RouteRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string>;
  companyId: string | null;
  /**
   * An opaque key of the calling client's network address: a keyed hash (under a secret of the
   * instance and the plugin's key), the same in every Keel process of one instance, never the
   * address itself. For per-client limits of public routes.
   */
  clientKey?: string;
  /** For a route declared `upload`: the stored file's metadata (the plugin owns the blob). */
  upload?: BlobHandle;
}

/** What a route declared `download` answers: the host streams the blob with safe headers. */
export interface BlobDownload { blob: string; disposition?: 'attachment' | 'inline'; filename?: string }

/** One call of a batched route, as a batch handler receives it: its request and its own ctx. */
export interface BatchCall<Granted extends CapabilityId | undefined = undefined, Jobs extends JobDeclarations = UntypedJobs> { request: RouteRequest; ctx: PluginContext<Granted, Jobs> }

export interface RouteResponse { status?: number; body?: unknown; headers?: Record<string, string> }
export interface WebhookRequest { headers: Record<string, string>; body: string; verified: boolean }
