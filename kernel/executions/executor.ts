import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { CallbackUrls, ExecutionSummary, HttpExecutionInput, ProbeInput, ProbeResult, ProcessExecutionInput } from '../../sdk/capabilities/executions.ts';
import type { ActivityLog } from '../activity/activity-log.ts';
import type { KeelConfig } from '../config/schema.ts';
import { int, type Database, type Row } from '../db/database.ts';
import { NotificationListener } from '../db/notification-listener.ts';
import type { EventBus } from '../events/event-bus.ts';
import type { StreamHub } from '../host/stream-hub.ts';
import { KeelError } from '../http/errors.ts';
import type { ServedHosts } from '../http/served-hosts.ts';
import { LIVE_STATUSES, type RunLedger } from '../runs/run-ledger.ts';
import type { Vault } from '../vault/vault.ts';
import { agentIdentity, WorkDirectories, type AgentIdentity } from './agent-user.ts';
import { AgentHomes } from './agent-homes.ts';
import { CredentialMask } from './credential-mask.ts';
import { closeExecutionRun, recordExecutionEnd } from './execution-end.ts';
import { ExecutionLog, readExecutionLog, type AnyExecutionRef, type ExecutionRef } from './execution-log.ts';
import { prepareExecution, secretHeadersFor, type Prepared } from './execution-prepare.ts';
import {
  EXECUTIONS_CHANNEL, INSERT_EXECUTION, LEASE_SEC, LIVE, LIVE_EXECUTION_STATUSES, MAX_EXECUTIONS_READ, MAX_LIVE_PER_COMPANY, orphanMarker, reachableExecutions, RUN_STATUS_FOR_SHARE, SCOPE_BEFORE_START, toSummary,
  type ExecutionCaller, type Finish, type Live,
} from './execution-rows.ts';
import { runHttpExecution } from './http-execution.ts';
import { OutputSpool } from './output-spool.ts';
import { runProbe } from './probe.ts';
import { runProcessExecution, type PreparedProcess } from './process-execution.ts';
import { killOrphanedGroup } from './process-runner.ts';
import { stopRemoteRun } from './remote-stop.ts';
import { assertBoardApprovedConfig, assertRunnable } from './start-checks.ts';
import { assertNoToolFields } from './tool-launch.ts';

const HEARTBEAT_MS = 5_000;
const SWEEP_MS = 10_000;
/** A live log event is one stream event (MAX_STREAM_EVENT_BYTES, with room for the envelope). */
const LIVE_LOG_EVENT_BYTES = 6_500;

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
    const prepared = await prepareExecution({ ...this.deps, servedHosts: this.servedHosts, agentUser: () => this.agentUser() }, caller, input, agent, toolLaunch);
    const executionId = randomUUID();
    const row = await db.transaction(async (tx) => {
      // The run is checked again under a share lock: a close of the ledger run between the first
      // check and this insert would otherwise find no execution to cancel, and the process would
      // outlive its run. A close waits for this commit, and its trigger then marks the execution.
      const current = await tx.maybeOne<Row>(RUN_STATUS_FOR_SHARE, [run.id]);
      if (!current || !LIVE_STATUSES.has(current.status)) {
        throw new KeelError(409, 'run_closed', `The run is already ${current?.status ?? 'gone'}`, { details: { status: current?.status ?? null } });
      }
      const inserted = await tx.maybeOne<Row>(INSERT_EXECUTION, [executionId, run.company_id, agent.id, run.id, caller.plugin, input.kind, this.instanceId, this.node, LEASE_SEC]);
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
      const now = await db.maybeOne<Row>(SCOPE_BEFORE_START, [entry.ref.executionId]);
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
        outcome = await runHttpExecution({ db, timeOut: (live) => this.timeOut(live) }, entry, prepared, token, log);
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

  /** The terminal row, the run's close and execution.finished, in one transaction; only while this process still owns it. */
  finish(entry: Live<AnyExecutionRef>, outcome: Partial<Finish>, log: ExecutionLog): Promise<void> {
    return recordExecutionEnd(this.deps, this.instanceId, entry, outcome, log);
  }

  async get(caller: ExecutionCaller, executionId: string): Promise<ExecutionSummary> {
    return toSummary(await this.find(caller, executionId, true));
  }

  /** Those among these ids (at most MAX_EXECUTIONS_READ) the caller may read; the others are left out. */
  async getMany(caller: ExecutionCaller, ids: readonly string[]): Promise<ExecutionSummary[]> { return (await reachableExecutions(this.deps.db, caller, ids.slice(0, MAX_EXECUTIONS_READ), true)).map(toSummary); }

  async readLog(caller: ExecutionCaller, executionId: string, options: { offset?: number; limitBytes?: number }): Promise<{ content: string; offset: number; nextOffset: number; eof: boolean }> {
    const row = await this.find(caller, executionId, true);
    return readExecutionLog(this.deps.db, row.id, options.offset ?? 0, options.limitBytes ?? 65_536, int(row.log_bytes), !LIVE_EXECUTION_STATUSES.has(row.status));
  }

  /** Marks the row and tells its owner (NOTIFY); the owner stops it. Idempotent. */
  async cancel(caller: ExecutionCaller, executionId: string, reason: string | undefined): Promise<ExecutionSummary> {
    const row = await this.find(caller, executionId);
    if (!LIVE_EXECUTION_STATUSES.has(row.status)) return toSummary(row);
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
    const [row] = await reachableExecutions(this.deps.db, caller, [executionId], read);
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
      if (lost) await closeExecutionRun(this.deps, tx, lost, 'failed', 'lost');
      return lost;
    });
    if (!row) return;
    this.deps.log.warn({ executionId, owner: row.owner_instance }, 'execution lost: the process that ran it is gone');
    if (row.remote_stop) void stopRemoteRun({ secretHeadersFor: (...args) => secretHeadersFor(this.deps, ...args), config: this.deps.config, db: this.deps.db, log: this.deps.log }, row);
    if (row.owner_node === this.node && row.pid) {
      if (killOrphanedGroup(row.pid, orphanMarker(row))) this.deps.log.warn({ executionId, pid: row.pid }, 'killed the process group a dead Keel process left behind');
    }
  }
}
