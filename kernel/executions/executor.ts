import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { MAX_EXECUTION_FILE_BYTES, type CallbackUrls, type ExecutionStatus, type ExecutionSummary, type HttpExecutionInput, type ProbeInput, type ProbeResult, type ProcessExecutionInput } from '../../sdk/capabilities/executions.ts';
import type { ActivityLog } from '../activity/activity-log.ts';
import type { KeelConfig } from '../config/schema.ts';
import { iso, int, type Database, type Row, type Tx } from '../db/database.ts';
import { NotificationListener } from '../db/notification-listener.ts';
import type { EventBus } from '../events/event-bus.ts';
import type { StreamHub } from '../host/stream-hub.ts';
import { KeelError } from '../http/errors.ts';
import type { ServedHosts } from '../http/served-hosts.ts';
import type { ResolvedAddress } from '../net/http-exchange.ts';
import { LIVE_STATUSES, type RunLedger } from '../runs/run-ledger.ts';
import { resolveRunEnvironment } from '../vault/run-environment.ts';
import type { Vault } from '../vault/vault.ts';
import { agentIdentity, WorkDirectories, type AgentIdentity } from './agent-user.ts';
import { AgentHomes } from './agent-homes.ts';
import { assertNoToolFields, assertToolExtras, prepareToolLaunch, toolProcessConfig } from './tool-launch.ts';
import { runProcessExecution, type PreparedProcess } from './process-execution.ts';
import { runProbe } from './probe.ts';
import { CredentialMask, credentialHeaderValues } from './credential-mask.ts';
import { ExecutionLog, readExecutionLog, type AnyExecutionRef, type ExecutionRef } from './execution-log.ts';
import { OutputSpool } from './output-spool.ts';
import { prepareLeasedWorkspace } from './leased-workspace.ts';
import { retryWhileDatabaseUnavailable } from '../db/connection-errors.ts';
import { assertUnderConfiguredUrl, runHttp } from './http-runner.ts';
import { assertInstanceAddress, checkConnectAddress } from './configured-addresses.ts';
import { askToStop, followRemoteRun, type RemoteRunSpec, type RemoteStopRecipe } from './remote-run.ts';
import { claimRemoteRun } from './remote-run-claims.ts';
import { isSecretRef } from '../tenancy/agent-config.ts';
import { AgentProcess, killOrphanedGroup } from './process-runner.ts';
import {
  assertBoardApprovedConfig, assertPluginExtras, assertRunnable, processConfig, safeRelativePath,
} from './start-checks.ts';

export const EXECUTIONS_CHANNEL = 'keel_executions';
export const LEASE_SEC = 30;
const HEARTBEAT_MS = 5_000;
const SWEEP_MS = 10_000;
const DEFAULT_HTTP_TIMEOUT_MS = 120_000;
export const LIVE = "status in ('starting', 'running')";
/** A live log event is one stream event (MAX_STREAM_EVENT_BYTES, with room for the envelope). */
const LIVE_LOG_EVENT_BYTES = 6_500;
/** A bound on what one company can have running at once (processes cost the machine, not the isolate). */
export const MAX_LIVE_PER_COMPANY = 100;

/** Who asks: the plugin and the company the brokered call serves; `contributes`: whether the plugin contributes an adapter type (the kernel point agent.adapter-config). */
export interface ExecutionCaller { plugin: string; companyId: string; contributes?: (adapterType: string) => boolean }

/** An execution this process supervises (agent runs here, workspace processes in workspace-processes.ts). */
export interface Live<Ref extends AnyExecutionRef = ExecutionRef> {
  ref: Ref;
  logChannel: string | null;
  cancelReason: string | null;
  timedOut: boolean;
  graceSec: number;
  process: AgentProcess | null;
  abort: AbortController | null;
  /** 2 once a tool launch's retryOnce started the command again. */
  attempts?: number;
}

/** `secretValues`: the credentials the start hands to the run besides its token (masked in its output). */
type Prepared = { secretValues: string[] } & (
  | PreparedProcess
  | { kind: 'http'; url: URL; addresses: ResolvedAddress[]; method: string; headers: Record<string, string>; body: Buffer | null; sse: boolean; timeoutMs: number; tokenHeader: string;
    secretHeaders: Record<string, string>; remote: RemoteRunSpec['follow'] | null; notes: string[];
    /** What the stop of a remote run needs again after this process is gone (never a secret value). */
    stopRecipe: Omit<RemoteStopRecipe, 'url'> });

/**
 * The executor tier: agent processes and HTTP exchanges, started for a plugin granted
 * `executions` (through the broker) and supervised here, in the kernel process, outside the
 * isolates. Each execution is a row leased by the process that runs it (heartbeat every 5 s,
 * lease 30 s); a process that dies leaves rows whose lease runs out, which the next start on
 * the same node (at once) or any process's sweeper (after expiry) marks `lost`. Ending an
 * execution by any path closes its run in the run ledger in the same transaction (the token is
 * revoked, `run.closed` is written) and writes `execution.finished` for the starting plugin.
 * A workspace's services and commands (workspace-processes.ts) are executions without a run,
 * under the same lease, sweeper and cancel.
 */
export class Executor {
  readonly instanceId = randomUUID();
  readonly node: string;
  /** What this process supervises: the heartbeat, the sweeper and cancels act on every entry, whatever started it. */
  readonly live = new Map<string, Live<AnyExecutionRef>>();
  readonly deps: { config: KeelConfig; log: Logger; db: Database; events: EventBus; runs: RunLedger; vault: Vault; activity: ActivityLog };
  private identity: AgentIdentity | null = null;
  private workDirs: WorkDirectories | null = null;
  private listener: NotificationListener | null = null;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;
  /** The plugins' stream hub (live logs on an execution's logChannel); known once the extension host exists. */
  streams: StreamHub | null = null;
  /** The instance URL agents call back (SERVICE_API_URL); known once the server listens. */
  apiUrl = '';
  /** The names this instance answers to (http/served-hosts.ts); known once the server listens. */
  servedHosts: ServedHosts | null = null;

  constructor(deps: Executor['deps']) {
    this.deps = deps;
    // One Keel process per data directory (its lock): rows of another instance on this node died with it.
    this.node = `${hostname()}:${deps.config.dataDir}`;
  }

  async start(databaseUrl: string, apiUrl: string, servedHosts: ServedHosts | null = null): Promise<void> {
    this.apiUrl = this.deps.config.auth.publicBaseUrl?.replace(/\/$/, '') ?? apiUrl;
    this.servedHosts = servedHosts;
    this.listener = new NotificationListener(databaseUrl, [EXECUTIONS_CHANNEL], this.deps.log, {
      onNotification: (_channel, payload) => { void this.cancelRequested(payload); },
      onListening: () => this.heartbeat(),
    });
    await this.listener.start();
    await this.sweep();
    this.timers.push(setInterval(() => void this.heartbeat(), HEARTBEAT_MS), setInterval(() => void this.sweep(), SWEEP_MS));
    for (const timer of this.timers) timer.unref();
  }

  /** Ends what runs here (SIGKILL to each group) and records it lost: nothing supervises it any more. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    for (const entry of this.live.values()) {
      entry.cancelReason ??= 'server_stopped';
      entry.process?.signalGroup('SIGKILL');
      entry.abort?.abort();
    }
    const deadline = Date.now() + 5_000;
    while (this.live.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await this.listener?.close();
  }

  agentUser(): AgentIdentity {
    this.identity ??= agentIdentity(this.deps.log);
    this.workDirs ??= new WorkDirectories(this.deps.config.dataDir, this.identity, this.deps.log);
    return this.identity;
  }

  /** The agents' persistent homes (tool launches). */
  private homes: AgentHomes | null = null;
  agentHomes(): AgentHomes {
    this.homes ??= new AgentHomes(this.deps.config.dataDir, this.agentUser(), this.deps.log);
    return this.homes;
  }

  /** What a run's process calls back (ExecutionsCapability.callbackUrl): the API, and the model gateway under it. */
  callbackUrls(): CallbackUrls {
    return { apiUrl: this.apiUrl, llmUrl: `${this.apiUrl}/api/llm` };
  }

  /** ExecutionsCapability.probe (probe.ts). */
  probe(caller: ExecutionCaller, input: ProbeInput): Promise<ProbeResult> {
    return runProbe(this, caller, input);
  }

  /** The per-execution home directories (created with the agent user). */
  workDirectories(): WorkDirectories {
    this.agentUser();
    return this.workDirs!;
  }

  /** Refuses a start while this process stops (its executions would be lost at once). */
  assertAccepting(): void {
    if (this.stopped) throw new KeelError(503, 'executor_stopping', 'This Keel process is stopping; start the execution again');
  }

  // ---- the capability ----

  async begin(caller: ExecutionCaller, input: ProcessExecutionInput | HttpExecutionInput): Promise<ExecutionSummary> {
    if (this.stopped) throw new KeelError(503, 'executor_stopping', 'This Keel process is stopping; start the execution again');
    const { db } = this.deps;
    const run = await db.maybeOne<Row>('select id, agent_id, company_id, status from runs where id = ? and company_id = ?', [input.runId.toLowerCase(), caller.companyId]);
    if (!run) throw new KeelError(404, 'run_not_found', 'Run not found');
    // Started once per run: a plugin's repeated start (a retried job whose transaction failed
    // after its start) answers the execution it started, live or ended, and starts nothing.
    const already = await db.maybeOne<Row>('select * from executions where run_id = ?', [run.id]);
    if (already) return this.repeatedStart(caller, already);
    if (!LIVE_STATUSES.has(run.status)) throw new KeelError(409, 'run_closed', `The run is already ${run.status}`, { details: { status: run.status } });
    const agent = (await db.maybeOne<Row>('select id, company_id, status, adapter_type, adapter_config from agents where id = ?', [run.agent_id]))!;
    const company = (await db.maybeOne<Row>('select status from companies where id = ?', [run.company_id]))!;
    assertRunnable(agent as { status: string }, company as { status: string });
    // A process runs process agents (their configuration's command and arguments) and, as a tool
    // launch (tool-launch.ts), agents of an adapter type the calling plugin contributes; an http
    // exchange runs http agents and contributed types (never a process agent).
    const toolLaunch = input.kind === 'process' && agent.adapter_type !== 'process' && (caller.contributes?.(agent.adapter_type) ?? false);
    if (input.kind === 'process' ? agent.adapter_type !== 'process' && !toolLaunch : agent.adapter_type === 'process') {
      throw new KeelError(409, 'adapter_mismatch', `The agent's adapter is ${agent.adapter_type}; a ${input.kind} execution cannot run it`);
    }
    if (input.kind === 'process' && !toolLaunch) assertNoToolFields(input as unknown as Record<string, unknown>);
    await assertBoardApprovedConfig(db, agent.id);
    const running = await db.maybeOne<Row>(`select count(*)::int as n from executions where company_id = ? and ${LIVE}`, [run.company_id]);
    if (int(running!.n) >= MAX_LIVE_PER_COMPANY) {
      throw new KeelError(429, 'too_many_executions', `A company runs at most ${MAX_LIVE_PER_COMPANY} executions at once; wait for one to end`);
    }
    const prepared = await this.prepare(caller, input, agent, toolLaunch);
    const executionId = randomUUID();
    const row = await db.transaction(async (tx) => {
      // The run is checked again under a share lock: a close of the ledger run between the first
      // check and this insert would otherwise find no execution to cancel, and the process would
      // outlive its run. A close waits for this commit, and its trigger then marks the execution.
      const current = await tx.maybeOne<Row>('select status from runs where id = ? for share', [run.id]);
      if (!current || !LIVE_STATUSES.has(current.status)) {
        throw new KeelError(409, 'run_closed', `The run is already ${current?.status ?? 'gone'}`, { details: { status: current?.status ?? null } });
      }
      const inserted = await tx.maybeOne<Row>(
        `insert into executions (id, company_id, agent_id, run_id, plugin, kind, owner_instance, owner_node, lease_until)
         values (?, ?, ?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?)) on conflict (run_id) do nothing returning *`,
        [executionId, run.company_id, agent.id, run.id, caller.plugin, input.kind, this.instanceId, this.node, LEASE_SEC]);
      if (!inserted) return null;
      await this.deps.activity.record(tx, {
        companyId: run.company_id, actorType: 'system', actorId: `plugin:${caller.plugin}`, agentId: agent.id, runId: run.id,
        action: 'execution.started', entityType: 'execution', entityId: executionId, details: { kind: input.kind, plugin: caller.plugin },
      });
      return inserted;
    });
    // Another start of the same run won the insert meanwhile.
    if (!row) return this.repeatedStart(caller, (await db.maybeOne<Row>('select * from executions where run_id = ?', [run.id]))!);
    const ref: ExecutionRef = { executionId, runId: run.id, companyId: run.company_id, agentId: agent.id, plugin: caller.plugin };
    const entry: Live = { ref, logChannel: input.logChannel ?? null, cancelReason: null, timedOut: false, graceSec: prepared.kind === 'process' ? prepared.config.graceSec : 0, process: null, abort: null };
    this.live.set(executionId, entry);
    void this.launch(entry, prepared).catch((error: unknown) => this.deps.log.error({ err: error, executionId }, 'execution failed in the executor'));
    return toSummary(row);
  }

  private repeatedStart(caller: ExecutionCaller, existing: Row): ExecutionSummary {
    if (existing.plugin !== caller.plugin) throw new KeelError(409, 'execution_exists', 'The run has an execution of another plugin; open a new run');
    return toSummary(existing);
  }

  /** Everything that can be refused is checked before the row exists: configuration, secrets, files, address. */
  private async prepare(caller: ExecutionCaller, input: ProcessExecutionInput | HttpExecutionInput, agent: Row, toolLaunch: boolean): Promise<Prepared> {
    if (input.kind === 'process') {
      const config = toolLaunch ? toolProcessConfig(agent.adapter_config, input.args ?? []) : processConfig(agent.adapter_config);
      const extras = input.env ?? {};
      if (toolLaunch) assertToolExtras(extras);
      else assertPluginExtras(extras);
      const tool = toolLaunch ? prepareToolLaunch(input) : null;
      const files = (input.files ?? []).map((file) => ({ path: safeRelativePath(file.path), content: Buffer.from(file.content, file.encoding === 'base64' ? 'base64' : 'utf8') }));
      const fileBytes = [...files, ...(tool?.home?.files ?? [])].reduce((sum, file) => sum + file.content.length, 0);
      if (fileBytes > MAX_EXECUTION_FILE_BYTES) throw new KeelError(400, 'invalid_arguments', `files: ${fileBytes} bytes in all; at most ${MAX_EXECUTION_FILE_BYTES}`);
      const workspace = await prepareLeasedWorkspace({ db: this.deps.db, vault: this.deps.vault, identity: () => this.agentUser() },
        { plugin: caller.plugin, runId: input.runId, agentId: agent.id, companyId: agent.company_id }, agent.adapter_config, input.workspace);
      const resolved = await resolveRunEnvironment(this.deps.db, this.deps.vault, agent as never, tool?.withhold);
      if (resolved.secrets.length > 0) {
        await this.deps.db.query(
          `insert into security_audit_log (company_id, actor_type, actor_id, event, agent_id, run_id, details) values (?, 'system', ?, 'secret.environment_resolved', ?, ?, ?::jsonb)`,
          [agent.company_id, `plugin:${caller.plugin}`, agent.id, input.runId, JSON.stringify({ plugin: caller.plugin, execution: true, secrets: resolved.secrets })]);
      }
      const secretValues = [
        ...resolved.secrets.map((secret) => resolved.env[secret.envName]!),
        ...(workspace?.secrets ?? []).filter((secret) => !tool?.withhold.has(secret.envName)).map((secret) => workspace!.env[secret.envName]!),
      ];
      return { kind: 'process', config, env: resolved.env, extras, files, workspace, secretValues, tool };
    }
    const config = (agent.adapter_config ?? {}) as Record<string, unknown>;
    const configured = config[input.baseUrlKey ?? 'url'];
    const url = assertUnderConfiguredUrl(input.url, configured);
    const addresses = await checkConnectAddress(url, this.deps.config, caller.plugin);
    // The address the remote side is handed as Keel's (it calls back with the run token): this instance only.
    const instanceUrl = input.instanceUrlKey ? config[input.instanceUrlKey] : undefined;
    if (instanceUrl !== undefined && instanceUrl !== null) assertInstanceAddress(instanceUrl, this.servedHosts, input.instanceUrlKey!);
    let remote: RemoteRunSpec['follow'] | null = null;
    if (input.remoteRun) {
      const follow = input.remoteRun;
      // Each template must stay under the configured base whatever the run server names its run.
      for (const template of [follow.eventsUrl, follow.statusUrl, follow.stopUrl]) assertUnderConfiguredUrl(template.replaceAll('{id}', 'run-id'), configured);
      remote = {
        eventsUrl: follow.eventsUrl, statusUrl: follow.statusUrl, stopUrl: follow.stopUrl, reconnectMs: follow.reconnectMs,
        terminalEvents: follow.terminalEvents, idFields: typeof follow.idField === 'string' ? [follow.idField] : follow.idField ?? ['id'], createAttempts: follow.createAttempts ?? 3,
      };
    }
    const secretValues: string[] = [];
    const secretHeaders = await this.secretHeadersFor(caller, input.secretHeaders ?? [], input.runId, agent, config, secretValues);
    const tokenHeader = (input.tokenHeader ?? 'authorization').toLowerCase();
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(input.headers ?? {})) {
      const lower = name.toLowerCase();
      if (!/^[a-z0-9-]{1,100}$/.test(lower) || /[\r\n\0]/.test(value)) throw new KeelError(400, 'invalid_arguments', `headers: ${JSON.stringify(name.slice(0, 100))} is not a valid header`);
      if (['host', 'content-length', 'transfer-encoding', 'connection', tokenHeader].includes(lower)) continue;
      headers[lower] = value;
    }
    secretValues.push(...credentialHeaderValues(headers));
    const body = input.body === undefined ? null : Buffer.from(JSON.stringify(input.body));
    if (body) headers['content-type'] = 'application/json';
    if (input.stream === 'sse') headers.accept = 'text/event-stream';
    return {
      kind: 'http', url, addresses, method: input.method ?? 'POST', headers, body, sse: input.stream === 'sse',
      timeoutMs: Math.min(input.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS, 24 * 3600 * 1000), tokenHeader, secretHeaders, remote,
      stopRecipe: { headers: Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'content-type' && name !== 'idempotency-key')), secretHeaders: input.secretHeaders ?? [], baseUrlKey: input.baseUrlKey ?? 'url' },
      notes: (input.notes ?? []).map((note) => note.replace(/[\r\n]+/g, ' ')), secretValues,
    };
  }

  /**
   * The headers whose values are secrets of the agent's configuration (a secret reference,
   * revealed here; the isolate never sees the value). A value that cannot be resolved refuses
   * the start. Which secrets were read is written to the security audit log, never the values;
   * the values themselves are added to `revealed` (to be masked in the run's output).
   */
  async secretHeadersFor(caller: ExecutionCaller, specs: NonNullable<HttpExecutionInput['secretHeaders']>, runId: string, agent: Row, config: Record<string, unknown>, revealed: string[] = []): Promise<Record<string, string>> {
    const headers: Record<string, string> = {};
    const used: Array<{ header: string; configKey: string; secretId: string | null; version: number | null }> = [];
    for (const entry of specs) {
      const stored = config[entry.configKey];
      let value: string;
      if (isSecretRef(stored)) {
        const selector = stored.version === undefined || stored.version === 'latest' ? 'latest' : stored.version;
        let revealed;
        try { revealed = await this.deps.vault.reveal(this.deps.db, agent.company_id, stored.secretId, selector); } catch (error) {
          throw new KeelError(422, 'secret_ref_unresolvable', `Cannot resolve adapterConfig.${entry.configKey}: ${error instanceof Error ? error.message : 'unknown secret'}`, { details: { path: `adapterConfig.${entry.configKey}` } });
        }
        value = revealed.value;
        used.push({ header: entry.header.toLowerCase(), configKey: entry.configKey, secretId: stored.secretId, version: revealed.version });
      } else if (typeof stored === 'string' && stored.length > 0) {
        value = stored;
        used.push({ header: entry.header.toLowerCase(), configKey: entry.configKey, secretId: null, version: null });
      } else {
        throw new KeelError(409, 'adapter_config_invalid', `The agent's adapterConfig has no ${entry.configKey} for the ${entry.header} header`);
      }
      if (/[\r\n\0]/.test(value)) throw new KeelError(409, 'adapter_config_invalid', `adapterConfig.${entry.configKey} cannot be sent in a header`);
      headers[entry.header.toLowerCase()] = entry.scheme ? `${entry.scheme} ${value}` : value;
      revealed.push(value);
    }
    if (used.length > 0) {
      await this.deps.db.query(
        `insert into security_audit_log (company_id, actor_type, actor_id, event, agent_id, run_id, details) values (?, 'system', ?, 'secret.environment_resolved', ?, ?, ?::jsonb)`,
        [agent.company_id, `plugin:${caller.plugin}`, agent.id, runId, JSON.stringify({ plugin: caller.plugin, execution: true, headers: used })]);
    }
    return headers;
  }

  private async launch(entry: Live, prepared: Prepared): Promise<void> {
    const { db } = this.deps;
    // Every credential handed to the run is masked in all its output becomes (the token once read).
    const mask = new CredentialMask(prepared.secretValues);
    const log = new ExecutionLog(db, this.deps.events, entry.ref, this.deps.log, {
      onBatch: entry.logChannel ? (offset, content) => this.publishLive(entry, offset, content) : null, mask,
      spool: prepared.kind === 'process' ? new OutputSpool(this.deps.config.dataDir, entry.ref.executionId, mask) : null,
    });
    let workDir: string | null = null;
    let outcome: Partial<Finish> = {};
    try {
      const token = await this.deps.runs.tokenFor(db, entry.ref.runId);
      mask.add(token);
      // The scope is checked again just before anything starts: a pause since `begin` wins.
      const now = await db.maybeOne<Row>(
        `select a.status as agent_status, c.status as company_status, e.cancel_requested_at, e.cancel_reason
           from executions e join agents a on a.id = e.agent_id join companies c on c.id = e.company_id where e.id = ?`, [entry.ref.executionId]);
      if (!now) return;
      if (now.cancel_requested_at) entry.cancelReason ??= now.cancel_reason ?? 'cancelled';
      try { assertRunnable({ status: now.agent_status }, { status: now.company_status }); } catch (error) {
        entry.cancelReason ??= (error as KeelError).code;
      }
      if (entry.cancelReason) {
        log.line('system', `not started: ${entry.cancelReason}`);
        outcome = {};
        return;
      }
      if (prepared.kind === 'process') {
        outcome = await this.runProcess(entry, prepared, token, log, (dir) => { workDir = dir; });
      } else {
        outcome = await this.runHttpExchange(entry, prepared, token, log);
      }
    } catch (error) {
      const code = error instanceof KeelError ? error.code : 'executor_failed';
      log.line('system', `executor error: ${code}`);
      outcome = { errorCode: code, failed: true };
      this.deps.log.error({ err: error, executionId: entry.ref.executionId }, 'execution could not be run');
    } finally {
      await this.finish(entry, outcome, log).catch((error: unknown) => this.deps.log.error({ err: error, executionId: entry.ref.executionId }, 'could not record the end of an execution'));
      this.live.delete(entry.ref.executionId);
      if (workDir) await this.workDirs?.remove(workDir).catch(() => undefined);
    }
  }

  /**
   * A stored log batch, live on the starting plugin's channel (a NOTIFY, not a copy of the log:
   * the log stays in execution_log_chunks). Too large for a stream event, it is announced with
   * its offsets only. Best effort: a subscriber that missed one reads the log by offset.
   */
  private publishLive(entry: Live, offset: number, content: Buffer): void {
    if (!this.streams || !entry.logChannel) return;
    const nextOffset = offset + content.length;
    const whole = { event: 'log', offset, nextOffset, content: content.toString('utf8') };
    const data = Buffer.byteLength(JSON.stringify(whole)) <= LIVE_LOG_EVENT_BYTES ? whole : { event: 'log', offset, nextOffset, truncated: true };
    void this.streams.publish(entry.ref.plugin, { companyId: entry.ref.companyId }, entry.logChannel, data)
      .catch((error: unknown) => this.deps.log.debug({ err: error, executionId: entry.ref.executionId }, 'could not publish a live log batch'));
  }

  private runProcess(entry: Live, prepared: PreparedProcess, token: string, log: ExecutionLog, created: (dir: string) => void): Promise<Partial<Finish>> {
    const identity = this.agentUser();
    return runProcessExecution({
      db: this.deps.db, identity, workDirs: this.workDirs!, homes: this.agentHomes(), urls: this.callbackUrls(), timeOut: (live) => this.timeOut(live),
    }, entry, prepared, token, log, created);
  }

  private async runHttpExchange(entry: Live, prepared: Extract<Prepared, { kind: 'http' }>, token: string, log: ExecutionLog): Promise<Partial<Finish>> {
    const abort = new AbortController();
    entry.abort = abort;
    if (entry.cancelReason) abort.abort();
    // The kernel's own headers win over the plugin's: the run token, then the configured secrets.
    const headers = { ...prepared.headers, [prepared.tokenHeader]: prepared.tokenHeader === 'authorization' ? `Bearer ${token}` : token, ...prepared.secretHeaders };
    // The deadline is the row's (the heartbeat enforces it, whatever the exchange reads); the timer only acts on it on time.
    const timer = setTimeout(() => this.timeOut(entry), prepared.timeoutMs);
    await this.deps.db.exec(`update executions set status = 'running', started_at = now(), deadline_at = now() + make_interval(secs => ?) where id = ? and ${LIVE}`,
      [prepared.timeoutMs / 1000, entry.ref.executionId]);
    for (const note of prepared.notes) log.line('system', `warning: ${note}`);
    if (prepared.remote) {
      try {
        const { 'content-type': _type, 'idempotency-key': _key, ...followHeaders } = headers;
        const outcome = await followRemoteRun({
          create: { url: prepared.url, method: prepared.method, headers, body: prepared.body },
          follow: prepared.remote, headers: followHeaders, addresses: prepared.addresses,
        }, log, abort.signal, (runUrl, stopUrl) => claimRemoteRun(this.deps.db, entry.ref.executionId, runUrl, { ...prepared.stopRecipe, url: stopUrl.href }));
        if (abort.signal.aborted) return { failed: true, httpStatus: outcome.httpStatus };
        return outcome;
      } finally {
        clearTimeout(timer);
      }
    }
    try {
      const answer = await runHttp({ url: prepared.url, addresses: prepared.addresses, method: prepared.method, headers, body: prepared.body, sse: prepared.sse, signal: abort.signal }, log);
      const ok = answer.status >= 200 && answer.status < 300;
      return { httpStatus: answer.status, response: answer.response, failed: !ok, errorCode: ok ? null : 'http_status' };
    } catch (error) {
      if (abort.signal.aborted) return { failed: true };
      const code = error instanceof KeelError ? error.code : 'http_failed';
      log.line('system', `request failed: ${code}`);
      return { failed: true, errorCode: code };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The terminal row, the run's close and execution.finished, in one transaction; only while this process still owns it. */
  async finish(entry: Live<AnyExecutionRef>, outcome: Partial<Finish>, log: ExecutionLog): Promise<void> {
    const written = await log.close();
    const status: ExecutionStatus = entry.cancelReason === 'server_stopped' ? 'lost'
      : entry.cancelReason ? 'cancelled'
        : entry.timedOut ? 'timed_out'
          : outcome.failed === false ? 'succeeded' : 'failed';
    const errorCode = status === 'cancelled' || status === 'lost' ? entry.cancelReason : status === 'timed_out' ? 'timeout' : outcome.errorCode ?? null;
    // An execution that ends while the database fails over is recorded once the new primary serves
    // (its entry stays live meanwhile, so the heartbeat keeps its lease); the update is conditional,
    // so a repeat after a commit whose answer was lost changes nothing.
    await retryWhileDatabaseUnavailable(() => this.deps.db.transaction(async (tx) => {
      const row = await tx.maybeOne<Row>(
        `update executions set status = ?, exit_code = ?, signal = ?, http_status = ?, error_code = ?, response = ?::jsonb,
                log_bytes = ?, log_sha256 = ?, finished_at = now()
          where id = ? and ${LIVE} and owner_instance = ? returning *`,
        [status, outcome.exitCode ?? null, outcome.signal ?? null, outcome.httpStatus ?? null, errorCode,
          outcome.response === undefined || outcome.response === null ? null : JSON.stringify(log.mask.value(outcome.response)),
          written.bytes, written.sha256, entry.ref.executionId, this.instanceId]);
      if (row) await this.closeRun(tx, row, status === 'lost' ? 'failed' : status, errorCode, entry.attempts);
    }), LEASE_SEC * 1000);
  }

  private async closeRun(tx: Tx, row: Row, runStatus: 'succeeded' | 'failed' | 'cancelled' | 'timed_out', reason: string | null, attempts?: number): Promise<void> {
    // A workspace process has no run to close; the rest (event, activity) is the same.
    const live = row.run_id ? await tx.maybeOne<Row>(`select status from runs where id = ? for update`, [row.run_id]) : null;
    if (live && LIVE_STATUSES.has(live.status)) {
      await this.deps.runs.close(tx, row.run_id, { status: runStatus, reason: reason ?? `execution ${row.status}` });
    }
    await this.deps.events.appendTo(tx, 'execution.finished', {
      executionId: row.id, runId: row.run_id, companyId: row.company_id, agentId: row.agent_id, status: row.status,
      exitCode: row.exit_code ?? null, signal: row.signal ?? null, httpStatus: row.http_status ?? null, errorCode: row.error_code ?? null,
      logBytes: int(row.log_bytes), response: row.response ?? null, ...(attempts ? { attempts } : {}),
    }, row.plugin);
    await this.deps.activity.record(tx, {
      companyId: row.company_id, actorType: 'system', actorId: 'executor', agentId: row.agent_id, runId: row.run_id,
      action: 'execution.finished', entityType: 'execution', entityId: row.id, details: { status: row.status, errorCode: row.error_code ?? null, plugin: row.plugin },
    });
  }

  async get(caller: ExecutionCaller, executionId: string): Promise<ExecutionSummary> {
    return toSummary(await this.find(caller, executionId, true));
  }

  async readLog(caller: ExecutionCaller, executionId: string, options: { offset?: number; limitBytes?: number }): Promise<{ content: string; offset: number; nextOffset: number; eof: boolean }> {
    const row = await this.find(caller, executionId, true);
    return readExecutionLog(this.deps.db, row.id, options.offset ?? 0, options.limitBytes ?? 65_536, int(row.log_bytes), !LIVE_STATUSES_EXEC.has(row.status));
  }

  /** Marks the row and tells its owner (NOTIFY); the owner stops it. Idempotent. */
  async cancel(caller: ExecutionCaller, executionId: string, reason: string | undefined): Promise<ExecutionSummary> {
    const row = await this.find(caller, executionId);
    if (!LIVE_STATUSES_EXEC.has(row.status)) return toSummary(row);
    const updated = await this.deps.db.transaction(async (tx) => {
      const marked = await tx.maybeOne<Row>(
        `update executions set cancel_requested_at = coalesce(cancel_requested_at, now()), cancel_reason = coalesce(cancel_reason, 'cancelled')
          where id = ? and ${LIVE} returning *`, [row.id]);
      if (!marked) return row;
      await tx.query('select pg_notify(?, ?)', [EXECUTIONS_CHANNEL, row.id]);
      await this.deps.activity.record(tx, {
        companyId: row.company_id, actorType: 'system', actorId: `plugin:${caller.plugin}`, agentId: row.agent_id, runId: row.run_id,
        action: 'execution.cancel_requested', entityType: 'execution', entityId: row.id, details: { reason: reason?.slice(0, 500) ?? null, plugin: caller.plugin },
      });
      return marked;
    });
    await this.cancelRequested(row.id);
    return toSummary(updated);
  }

  /**
   * An execution of the caller's; `read`: or of a run the caller opened (the runtime reads the
   * log of a run whose adapter type another plugin contributes and runs). Only the starter cancels.
   */
  private async find(caller: ExecutionCaller, executionId: string, read = false): Promise<Row> {
    const row = await this.deps.db.maybeOne<Row>(
      `select e.* from executions e join runs r on r.id = e.run_id
        where e.id = ? and e.company_id = ? and (e.plugin = ? or (?::boolean and r.opened_by_plugin = ?))`,
      [executionId.toLowerCase(), caller.companyId, caller.plugin, read, caller.plugin]);
    if (!row) throw new KeelError(404, 'execution_not_found', 'Execution not found');
    return row;
  }

  // ---- supervision ----

  /** A cancel was asked (by anyone, in any process): the owner, if it is this process, stops it. */
  private async cancelRequested(executionId: string): Promise<void> {
    const entry = this.live.get(executionId);
    if (!entry) return;
    const row = await this.deps.db.maybeOne<Row>('select cancel_reason from executions where id = ? and cancel_requested_at is not null', [executionId]);
    if (!row) return;
    this.stopLive(entry, row.cancel_reason ?? 'cancelled');
  }

  /** Stops an execution this process runs (any path: a cancel, a stop, a NOTIFY seen by the heartbeat). */
  stopLive(entry: Live<AnyExecutionRef>, reason: string): void {
    if (entry.cancelReason) return;
    entry.cancelReason = reason;
    entry.process?.stop(entry.graceSec);
    entry.abort?.abort();
  }

  /**
   * The execution's deadline passed: it ends `timed_out` (a process gets SIGTERM then SIGKILL
   * after graceSec; a remote run is asked to stop on its run server). Idempotent.
   */
  timeOut(entry: Live<AnyExecutionRef>): void {
    if (entry.timedOut || entry.cancelReason) return;
    entry.timedOut = true;
    entry.process?.stop(entry.graceSec);
    entry.abort?.abort();
  }

  /** Renews this process's leases; a cancel whose NOTIFY was missed, and a deadline that passed, are seen here. */
  private async heartbeat(): Promise<void> {
    if (this.live.size === 0) return;
    try {
      const rows = await this.deps.db.query<Row>(
        `update executions set lease_until = now() + make_interval(secs => ?) where owner_instance = ? and ${LIVE}
         returning id, cancel_requested_at, cancel_reason, coalesce(deadline_at < now(), false) as overdue`,
        [LEASE_SEC, this.instanceId]);
      for (const row of rows) {
        const entry = this.live.get(row.id);
        if (entry && row.cancel_requested_at) this.stopLive(entry, row.cancel_reason ?? 'cancelled');
        else if (entry && row.overdue) this.timeOut(entry);
      }
    } catch (error) {
      this.deps.log.warn({ err: error }, 'could not renew execution leases');
    }
  }

  /**
   * Executions nobody supervises any more: another instance on this node (it held this data
   * directory's lock, so it is dead), or any owner whose lease expired. Each is marked lost and
   * its run closed; a process group the dead instance left on this node is killed.
   */
  async sweep(): Promise<void> {
    try {
      const orphans = await this.deps.db.query<Row>(
        `select id from executions where ${LIVE} and (lease_until < now() or (owner_node = ? and owner_instance <> ?)) limit 100`,
        [this.node, this.instanceId]);
      for (const orphan of orphans) await this.markLost(orphan.id);
    } catch (error) {
      this.deps.log.warn({ err: error }, 'could not sweep lost executions');
    }
  }

  private async markLost(executionId: string): Promise<void> {
    const row = await this.deps.db.transaction(async (tx) => {
      const lost = await tx.maybeOne<Row>(
        `update executions set status = 'lost', error_code = 'lost', finished_at = now()
          where id = ? and ${LIVE} and (lease_until < now() or (owner_node = ? and owner_instance <> ?)) returning *`,
        [executionId, this.node, this.instanceId]);
      if (lost) await this.closeRun(tx, lost, 'failed', 'lost');
      return lost;
    });
    if (!row) return;
    this.deps.log.warn({ executionId, owner: row.owner_instance }, 'execution lost: the process that ran it is gone');
    if (row.remote_stop) void stopRemoteRun({ secretHeadersFor: (...args) => this.secretHeadersFor(...args), config: this.deps.config, db: this.deps.db, log: this.deps.log }, row);
    if (row.owner_node === this.node && row.pid) {
      if (killOrphanedGroup(row.pid, orphanMarker(row))) this.deps.log.warn({ executionId, pid: row.pid }, 'killed the process group a dead Keel process left behind');
    }
  }
}

/**
 * The remote run of an execution marked lost is still running on its run server, which nobody
 * follows any more: it is asked to stop, as the dead process would have at its deadline. The
 * secrets are revealed again from the agent's configuration (audited like a start), and only
 * while the stop URL is still under the configured base URL and its address passes the same
 * checks (a changed configuration is not sent the key). Best effort, logged.
 */
async function stopRemoteRun(executor: { secretHeadersFor: Executor['secretHeadersFor']; config: KeelConfig; db: Database; log: Logger }, row: Row): Promise<void> {
  const recipe = row.remote_stop as RemoteStopRecipe;
  try {
    const agent = await executor.db.maybeOne<Row>('select id, company_id, adapter_config from agents where id = ?', [row.agent_id]);
    if (!agent) return;
    const config = (agent.adapter_config ?? {}) as Record<string, unknown>;
    const url = assertUnderConfiguredUrl(recipe.url, config[recipe.baseUrlKey]);
    const addresses = await checkConnectAddress(url, executor.config, row.plugin);
    const secrets = await executor.secretHeadersFor({ plugin: row.plugin, companyId: row.company_id }, recipe.secretHeaders, row.run_id, agent, config);
    const status = await askToStop({ headers: { ...recipe.headers, ...secrets }, addresses }, url);
    executor.log.warn({ executionId: row.id, status }, status === null ? 'asked the run server to stop the remote run of a lost execution: no answer' : 'asked the run server to stop the remote run of a lost execution');
  } catch (error) {
    executor.log.warn({ err: error, executionId: row.id }, 'could not ask the run server to stop the remote run of a lost execution');
  }
}

/** The variable that recognises an execution's process group in /proc (the run's, or a workspace process's own id). */
export function orphanMarker(row: Row): string {
  return row.run_id ? `SERVICE_RUN_ID=${row.run_id}` : `KEEL_EXECUTION_ID=${row.id}`;
}

export interface Finish { exitCode: number | null; signal: string | null; httpStatus: number | null; errorCode: string | null; response: unknown; failed: boolean }

const LIVE_STATUSES_EXEC: ReadonlySet<string> = new Set(['starting', 'running']);

export function toSummary(row: Row): ExecutionSummary {
  return {
    executionId: row.id, runId: row.run_id, agentId: row.agent_id, kind: row.kind, status: row.status,
    pid: row.pid ?? null, exitCode: row.exit_code ?? null, signal: row.signal ?? null, httpStatus: row.http_status ?? null,
    errorCode: row.error_code ?? null, logBytes: int(row.log_bytes), logSha256: row.log_sha256 ?? null,
    startedAt: iso(row.started_at), finishedAt: iso(row.finished_at), createdAt: iso(row.created_at)!,
  };
}
