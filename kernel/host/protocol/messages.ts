/**
 * The contract between the kernel and a plugin's extension-host worker process. The channel
 * uses V8's structured serialization (worker-host.ts), which copies a long string without
 * escaping it; every message is still plain data (strings, numbers, booleans, null, arrays
 * and plain objects), and values whose meaning is JSON's (a plugin's answer, a kernel
 * capability's result) travel as JSON text, produced by JSON.stringify on the sending side and
 * parsed on the far side, so nothing depends on how the channel would copy a Date or a class.
 * Identity (company, actor, run) always comes from the kernel, never from the worker.
 */
import type { InvocationInfo } from '../../../sdk/plugin/context.ts';

/**
 * The host's own activity entry for a call whose plugin wrote none. `onlyIfWritten` (jobs): only
 * when the call's transaction wrote something, so a clock-driven job that found nothing to do
 * (a sweep every minute) leaves its run record and no entry in the company's audit trail.
 */
export interface DefaultActivity { action: string; entityType: string; entityId: string; onlyIfWritten?: boolean }

export interface WorkerInit {
  pluginKey: string;
  version: string;
  code: string;
  grants: string[];
  config: Record<string, unknown>;
  /**
   * resetSessions: reset pooled connections on return (only needed where the database could not be hardened).
   * applicationName: unique to one worker process, so that the kernel can end that worker's
   * sessions (and the statements they run) once the process is gone.
   */
  database: { url: string; schema: string; resetSessions?: boolean; applicationName?: string } | null;
  network: string[];
  /** Hosts of `network` the operator opened to non-public addresses (configuration `plugins.privateNetworkHosts`). */
  privateNetworkHosts?: string[];
  folders: Record<string, { path: string; access: 'read' | 'readWrite' }>;
  limits: { memoryMb: number; callTimeoutMs: number; cpuSliceMs: number; maxResponseBytes: number; maxLogLinesPerMinute: number };
  /** The events the manifest declares under publishedEvents (name and payload schema): ctx.events.publish checks a publication against them in the worker. */
  publishedEvents: Array<{ name: string; schema: Record<string, unknown> }>;
  /** Bridge credential that lets the worker write activity for signed invocations (see capabilities/activity-write/worker.ts). */
  activitySigning: boolean;
  /** V8's code cache of `code` from an earlier load (the worker answered it with `loaded`): a restart compiles little. */
  codeCache?: Uint8Array;
}

export interface InvokeMessage {
  t: 'invoke';
  id: string;
  kind: InvocationInfo['kind'];
  target: string;
  /** JSON text of the handler input. */
  input: string;
  info: InvocationInfo;
  transactional: boolean;
  /** A read-only call: no transaction (each statement runs alone on a pooled connection, read-only by its default) and no activity. */
  readOnly?: boolean;
  /** The invocation identity signed by the kernel, for writes to kernel tables from the plugin's transaction. */
  signed: { invocation: string; signature: string } | null;
  /** Activity entry the host writes when the plugin wrote none (mutating routes, jobs). */
  defaultActivity: DefaultActivity | null;
  deadlineMs: number;
  /**
   * Local-folder mounts of the invocation's company (plugins granted local.folders only):
   * every declared folder key, with the stored real path or null when not configured.
   * Absent when the invocation has no company.
   */
  folders?: Record<string, FolderMount>;
  /**
   * Calls of the same plugin this one is nested in through service calls (their ids, outermost
   * first), each waiting for this one to answer. While one of them holds a connection of the
   * plugin's pool, this call may not wait for another (PluginDatabase.transactionOf).
   */
  enclosing?: string[];
}

export interface FolderMount { path: string | null; access: 'read' | 'readWrite' }

/** What the kernel says to one plugin of a worker process. */
export type SlotMessage =
  | InvokeMessage
  /** Calls of one batched route, run in one transaction with a savepoint per item; each answered after the commit. */
  | { t: 'invoke_batch'; items: InvokeMessage[] }
  /**
   * The answer to a kernel capability call: `json` is its value as JSON text (absent for
   * undefined). secrets: values the answer delivers (secrets.resolveEnvironment), which the
   * worker keeps out of every output.
   */
  | { t: 'reply'; id: number; ok: boolean; json?: string; error?: WireError; secrets?: string[] }
  | { t: 'config'; config: Record<string, unknown> };

/**
 * A message for one plugin of a process, named by its slot: a process holds one plugin (a
 * third-party plugin's own worker) or several (the first-party plugins' shared worker), and a
 * slot is one loading of one plugin, so an upgraded plugin's new slot never gets the old one's answers.
 */
export type Addressed<T> = T extends unknown ? T & { slot: string } : never;

export type KernelToWorker =
  | { t: 'load'; slot: string; init: WorkerInit }
  | { t: 'unload'; slot: string }
  | Addressed<SlotMessage>
  /** Ends the process, every plugin in it. */
  | { t: 'shutdown' };

export interface WireError {
  status: number; code: string; message: string; details?: unknown;
  /** A validation error's problems, answered at the top level of the error body. */
  issues?: Array<{ path: string | Array<string | number>; message: string }>;
}

/**
 * A route's `respond()` envelope, taken apart by the worker, which has parsed the answer
 * anyway: the kernel writes `body` (the envelope's body as JSON text; absent when it has none)
 * as it is and checks the other parts as it checks any envelope (contributions/route-answer.ts).
 */
export interface RouteEnvelope { status?: unknown; headers?: unknown; events?: unknown; stream?: unknown; proxy?: unknown; body?: string }

/**
 * A call's outcome. A successful answer is `value` (JSON text), or `envelope` for a route's or
 * webhook's answer that is a `respond()` envelope and nothing else. `kernelRowsWritten`: the
 * committed transaction changed kernel rows through a `keel_bridge` write (a pause, a budget),
 * so the kernel waits for its caches to hear of it before answering; absent otherwise.
 */
export interface CallResult { id: string; ok: boolean; value?: string; envelope?: RouteEnvelope; error?: WireError; activityWritten: boolean; kernelRowsWritten?: true }

/**
 * What a batch's transaction sent to PostgreSQL. `statements`: query messages (a multi-statement
 * text, such as COMMIT with the session reset, is one). `roundTrips`: times the connection went
 * from nothing in flight to a statement in flight; a statement sent while another is still
 * unanswered rides that one's round trip (the connection pipelines), so this is how many times
 * the batch waited for the server.
 */
export interface DatabaseTraffic { statements: number; roundTrips: number }

/** What one plugin of a worker process says to the kernel. */
export type SlotReport =
  | ({ t: 'result' } & CallResult)
  /** The results of a batch, in one message (one write instead of one per call); `database`: what its transaction sent (round-trips.ts). */
  | { t: 'results'; results: CallResult[]; database?: DatabaseTraffic }
  | { t: 'call'; id: number; invocationId: string; capability: string; method: string; args: unknown[] }
  | { t: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; message: string; fields?: Record<string, unknown>; invocationId?: string };

export type WorkerToKernel =
  | Addressed<SlotReport>
  /** `codeCache`: V8's code cache of the plugin's bundle, when this load made one; the kernel sends it with the next load. */
  | { t: 'loaded'; slot: string; bootMs: number; codeCache?: Uint8Array }
  | { t: 'load_failed'; slot: string; error: WireError }
  /** The plugin of this slot is gone from the process (it must start afresh); the kernel loads it again. */
  | { t: 'restart'; slot: string; reason: string }
  /** The whole process is ending, with every plugin in it; `pluginKey` names the plugin whose isolate ended it. */
  | { t: 'fatal'; reason: string; pluginKey?: string };
