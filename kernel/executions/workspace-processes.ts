import { randomUUID } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import { sep } from 'node:path';
import { refusedRunVariable } from '../../sdk/capabilities/run-variable-names.ts';
import type { WorkspaceProcessInput, WorkspaceProcessPurpose, WorkspaceProcessSummary } from '../../sdk/capabilities/workspace-processes.ts';
import type { InvocationInfo } from '../../sdk/plugin/context.ts';
import { LOCAL_BOARD_USER_ID } from '../auth/actor.ts';
import type { ActorResolver } from '../auth/resolve-actor.ts';
import { iso, int, type Row } from '../db/database.ts';
import { KeelError } from '../http/errors.ts';
import { isUuid } from '../http/validate.ts';
import { ExecutionLog, heldLineChars, readExecutionLog, type WorkspaceExecutionRef } from './execution-log.ts';
import { CredentialMask } from './credential-mask.ts';
import { EXECUTIONS_CHANNEL, LEASE_SEC, LIVE, MAX_LIVE_PER_COMPANY, type Live } from './execution-rows.ts';
import type { Executor } from './executor.ts';
import { AgentProcess } from './process-runner.ts';

/**
 * Workspace processes (ctx.workspaceProcesses): a working copy's runtime services and workspace
 * commands, which a board user defined and a board user asks to run. They are executions like
 * agent runs, rows of the same table with the same supervision (the executor's lease, heartbeat,
 * sweeper and cancel NOTIFY, which act on every row whatever started it): only what differs is
 * here. There is no run and no agent: the process runs as the agent user in a PID namespace of
 * its own, with PATH, HOME (a directory of its own), LANG, TMPDIR and the definition's variables
 * only, in the definition's cwd, which must really lie (links resolved) inside a folder an
 * operator mounted for the company for the calling plugin.
 */
export interface WorkspaceCaller { plugin: string; companyId: string; actor: InvocationInfo['actor'] }

const DEFAULT_GRACE_SEC = 5;
const DEFAULT_STOP_WAIT_MS = 10_000;
const LIVE_STATUSES: ReadonlySet<string> = new Set(['starting', 'running']);
const TARGET: Record<WorkspaceProcessPurpose, string> = { service: 'workspace_service', command: 'workspace_command' };

/** `secretValues`: the vault secrets revealed into its environment (masked in its log). */
interface Prepared { input: WorkspaceProcessInput; cwd: string; env: Record<string, string>; graceSec: number; secretValues: string[] }

const made = new WeakMap<Executor, WorkspaceProcesses>();

/** The one per executor (its live map is the workspace processes' too). */
export function workspaceProcessesOf(executor: Executor, resolver: ActorResolver): WorkspaceProcesses {
  let found = made.get(executor);
  if (!found) made.set(executor, (found = new WorkspaceProcesses(executor, resolver)));
  return found;
}

export class WorkspaceProcesses {
  private readonly executor: Executor;
  private readonly resolver: ActorResolver;

  constructor(executor: Executor, resolver: ActorResolver) {
    this.executor = executor;
    this.resolver = resolver;
  }

  async begin(caller: WorkspaceCaller, input: WorkspaceProcessInput): Promise<WorkspaceProcessSummary> {
    this.executor.assertAccepting();
    const userId = await this.assertBoardUser(caller);
    const { db, activity } = this.executor.deps;
    const company = await db.maybeOne<Row>('select status from companies where id = ?', [caller.companyId]);
    if (company?.status !== 'active') throw new KeelError(409, 'company_not_active', `The company is ${company?.status ?? 'gone'}; its workspaces run nothing`);
    const prepared = await this.prepare(caller, input);
    const running = await db.maybeOne<Row>(`select count(*)::int as n from executions where company_id = ? and ${LIVE}`, [caller.companyId]);
    if (int(running!.n) >= MAX_LIVE_PER_COMPANY) {
      throw new KeelError(429, 'too_many_executions', `A company runs at most ${MAX_LIVE_PER_COMPANY} executions at once; wait for one to end`);
    }
    const executionId = randomUUID();
    const row = await db.transaction(async (tx) => {
      const inserted = (await tx.maybeOne<Row>(
        `insert into executions (id, company_id, plugin, kind, target, workspace_ref, label, started_by, grace_sec, owner_instance, owner_node, lease_until)
         values (?, ?, ?, 'process', ?, ?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?)) returning *`,
        [executionId, caller.companyId, caller.plugin, TARGET[input.purpose], input.workspaceRef, input.label, userId, prepared.graceSec,
          this.executor.instanceId, this.executor.node, LEASE_SEC]))!;
      await activity.record(tx, {
        companyId: caller.companyId, actorType: 'user', actorId: userId, action: 'workspace_process.started', entityType: 'execution', entityId: executionId,
        details: { purpose: input.purpose, label: input.label, workspaceRef: input.workspaceRef, plugin: caller.plugin, command: input.command },
      });
      return inserted;
    });
    const entry: Live<WorkspaceExecutionRef> = {
      ref: { executionId, runId: null, companyId: caller.companyId, agentId: null, plugin: caller.plugin },
      logChannel: null, cancelReason: null, timedOut: false, graceSec: prepared.graceSec, process: null, abort: null,
    };
    this.executor.live.set(executionId, entry);
    void this.launch(entry, prepared).catch((error: unknown) => this.executor.deps.log.error({ err: error, executionId }, 'workspace process failed in the executor'));
    return summaryOf(row);
  }

  async get(caller: WorkspaceCaller, executionId: string): Promise<WorkspaceProcessSummary> {
    return summaryOf(await this.find(caller, executionId));
  }

  async readLog(caller: WorkspaceCaller, executionId: string, options: { offset?: number; limitBytes?: number }) {
    const row = await this.find(caller, executionId);
    return readExecutionLog(this.executor.deps.db, row.id, options.offset ?? 0, options.limitBytes ?? 65_536, int(row.log_bytes), !LIVE_STATUSES.has(row.status));
  }

  /**
   * Marks the row and tells its owner (NOTIFY keel_executions, which every Keel process listens
   * on): whichever process runs it stops it. Waits for the end, up to `waitMs`.
   */
  async stop(caller: WorkspaceCaller, executionId: string, options: { reason?: string; waitMs?: number }): Promise<WorkspaceProcessSummary> {
    const userId = await this.assertBoardUser(caller);
    const row = await this.find(caller, executionId);
    if (!LIVE_STATUSES.has(row.status)) return summaryOf(row);
    const { db, activity } = this.executor.deps;
    await db.transaction(async (tx) => {
      const marked = await tx.maybeOne<Row>(
        `update executions set cancel_requested_at = coalesce(cancel_requested_at, now()), cancel_reason = coalesce(cancel_reason, 'stopped')
          where id = ? and ${LIVE} returning id`, [row.id]);
      if (!marked) return;
      await tx.query('select pg_notify(?, ?)', [EXECUTIONS_CHANNEL, row.id]);
      await activity.record(tx, {
        companyId: row.company_id, actorType: 'user', actorId: userId, action: 'workspace_process.stop_requested', entityType: 'execution', entityId: row.id,
        details: { purpose: purposeOf(row), label: row.label, workspaceRef: row.workspace_ref, reason: options.reason?.slice(0, 500) ?? null, plugin: caller.plugin },
      });
    });
    const here = this.executor.live.get(row.id);
    if (here) this.executor.stopLive(here, 'stopped');
    const deadline = Date.now() + (options.waitMs ?? DEFAULT_STOP_WAIT_MS);
    for (;;) {
      const now = (await db.maybeOne<Row>('select * from executions where id = ?', [row.id]))!;
      if (!LIVE_STATUSES.has(now.status) || Date.now() >= deadline) return summaryOf(now);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** A board user with access to the company asked (the plugin calls on their behalf); an agent or a job never. */
  private async assertBoardUser(caller: WorkspaceCaller): Promise<string> {
    const { actor } = caller;
    if (actor.type !== 'user') {
      throw new KeelError(403, 'board_user_required', "Workspace services and commands are started and stopped only on a board user's request");
    }
    if (actor.id === LOCAL_BOARD_USER_ID) return actor.id;
    const user = isUuid(actor.id) ? await this.resolver.user(actor.id) : undefined;
    if (!user || !(user.isInstanceAdmin || user.companyIds.includes(caller.companyId))) {
      throw new KeelError(403, 'company_access_denied', 'User does not have access to this company');
    }
    return user.id;
  }

  /** Everything that can be refused, before the row exists: the cwd, the variables, the secrets. */
  private async prepare(caller: WorkspaceCaller, input: WorkspaceProcessInput): Promise<Prepared> {
    const env: Record<string, string> = {};
    const refs: Array<{ name: string; secretId: string; selector: 'latest' | number }> = [];
    for (const [name, value] of Object.entries(input.env ?? {})) {
      const why = refusedRunVariable(name);
      if (why) throw new KeelError(422, 'workspace_env_refused', `env: ${JSON.stringify(name.slice(0, 100))} ${why}`, { details: { name: name.slice(0, 100) } });
      if (typeof value === 'string') {
        if (value.includes('\0')) throw new KeelError(400, 'invalid_arguments', `env.${name} contains a NUL character`);
        env[name] = value;
      } else {
        refs.push({ name, secretId: value.secretId, selector: value.version === undefined || value.version === 'latest' ? 'latest' : value.version });
      }
    }
    const cwd = await this.confinedCwd(caller, input.cwd);
    if (refs.length > 0) {
      const { db, vault } = this.executor.deps;
      const outcomes = await vault.revealMany(db, caller.companyId, refs.map((ref) => ({ secretId: ref.secretId, selector: ref.selector })));
      const used: Array<{ envName: string; secretId: string; version: number }> = [];
      for (const [index, ref] of refs.entries()) {
        const outcome = outcomes[index]!;
        if (!outcome.ok) {
          throw new KeelError(422, 'secret_ref_unresolvable', `Cannot resolve env.${ref.name}: ${outcome.error.message}`, { details: { envName: ref.name, secretId: ref.secretId } });
        }
        env[ref.name] = outcome.value;
        used.push({ envName: ref.name, secretId: ref.secretId, version: outcome.version });
      }
      await db.query(
        `insert into security_audit_log (company_id, actor_type, actor_id, event, details) values (?, 'user', ?, 'secret.environment_resolved', ?::jsonb)`,
        [caller.companyId, caller.actor.id, JSON.stringify({ plugin: caller.plugin, workspaceProcess: true, label: input.label, secrets: used })]);
    }
    return { input, cwd, env, graceSec: input.graceSec ?? DEFAULT_GRACE_SEC, secretValues: refs.map((ref) => env[ref.name]!) };
  }

  /**
   * The cwd's real path (links resolved), which must lie inside the real path of a folder an
   * operator mounted for this company for the calling plugin: the confinement local.workspaces
   * applies, decided here by the kernel rather than trusted from the plugin. The process starts
   * in the resolved path, not the text the plugin gave.
   */
  private async confinedCwd(caller: WorkspaceCaller, raw: string): Promise<string> {
    // eslint-disable-next-line no-control-regex
    if (!raw.startsWith('/') || /[\u0000-\u001f\u007f]/.test(raw) || raw.split('/').some((part) => part === '.' || part === '..')) {
      throw new KeelError(400, 'invalid_arguments', 'cwd must be an absolute path without "." or ".." segments or control characters');
    }
    const mounts = await this.executor.deps.db.query<{ path: string }>(
      'select path from plugin_folder_mounts where plugin_key = ? and company_id = ?', [caller.plugin, caller.companyId]);
    const real = await realpath(raw).catch(() => null);
    if (!real || !(await stat(real)).isDirectory()) throw new KeelError(422, 'workspace_cwd_missing', `"${raw}" is not an existing directory`);
    for (const mount of mounts) {
      const root = await realpath(mount.path).catch(() => null);
      if (root && (real === root || real.startsWith(root.endsWith(sep) ? root : root + sep))) return real;
    }
    throw new KeelError(403, 'workspace_cwd_not_mounted', `"${raw}" does not lie inside a folder an operator mounted for this company (links are followed)`);
  }

  private async launch(entry: Live<WorkspaceExecutionRef>, prepared: Prepared): Promise<void> {
    const { executor } = this;
    const { db, events, log: logger } = executor.deps;
    const { executionId } = entry.ref;
    const log = new ExecutionLog(db, events, entry.ref, logger, { mask: new CredentialMask(prepared.secretValues) });
    let home: string | null = null;
    let outcome: { exitCode?: number | null; signal?: string | null; errorCode?: string | null; failed?: boolean } = {};
    try {
      const identity = executor.agentUser();
      home = await executor.workDirectories().create(executionId);
      // A stop asked while the row was being written wins.
      const now = await db.maybeOne<Row>('select cancel_requested_at, cancel_reason from executions where id = ?', [executionId]);
      if (now?.cancel_requested_at) entry.cancelReason ??= now.cancel_reason ?? 'stopped';
      if (entry.cancelReason) {
        log.line('system', `not started: ${entry.cancelReason}`);
        return;
      }
      const { input } = prepared;
      const env = { ...prepared.env, PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TMPDIR: home, KEEL_EXECUTION_ID: executionId };
      log.line('system', `${input.purpose} ${input.label}: ${input.command} in ${prepared.cwd}`);
      const child = new AgentProcess({
        command: input.command, args: input.args ?? [], cwd: prepared.cwd, env,
        uid: identity.separate ? identity.uid : undefined, gid: identity.separate ? identity.gid : undefined, pidNamespace: identity.pidNamespaces,
      }, log, { holdChars: heldLineChars(log.mask) });
      entry.process = child;
      if (child.pid) await db.exec(`update executions set status = 'running', pid = ?, started_at = now() where id = ? and ${LIVE}`, [child.pid, executionId]);
      if (entry.cancelReason) child.stop(entry.graceSec);
      let timer: NodeJS.Timeout | null = null;
      if (input.timeoutSec !== undefined) {
        timer = setTimeout(() => { entry.timedOut = true; log.line('system', `timed out after ${input.timeoutSec} s`); child.stop(entry.graceSec); }, input.timeoutSec * 1000);
      }
      const result = await child.done;
      if (timer) clearTimeout(timer);
      if (result.spawnError) {
        log.line('system', `could not start ${input.command}: ${result.spawnError}`);
        outcome = { errorCode: 'spawn_failed', failed: true };
        return;
      }
      log.line('system', result.signal ? `ended by ${result.signal}` : `exited with code ${result.exitCode}`);
      outcome = { exitCode: result.exitCode, signal: result.signal, failed: result.exitCode !== 0, errorCode: result.exitCode === 0 ? null : 'exit_status' };
    } catch (error) {
      const code = error instanceof KeelError ? error.code : 'executor_failed';
      log.line('system', `executor error: ${code}`);
      outcome = { errorCode: code, failed: true };
      logger.error({ err: error, executionId }, 'workspace process could not be run');
    } finally {
      await executor.finish(entry, outcome, log).catch((error: unknown) => logger.error({ err: error, executionId }, 'could not record the end of a workspace process'));
      executor.live.delete(executionId);
      if (home) await executor.workDirectories().remove(home).catch(() => undefined);
    }
  }

  /** A workspace process of the calling plugin in the call's company (anything else is not found, like an unknown id). */
  private async find(caller: WorkspaceCaller, executionId: string): Promise<Row> {
    const row = await this.executor.deps.db.maybeOne<Row>(
      `select * from executions where id = ? and company_id = ? and plugin = ? and target <> 'agent_run'`, [executionId.toLowerCase(), caller.companyId, caller.plugin]);
    if (!row) throw new KeelError(404, 'execution_not_found', 'Execution not found');
    return row;
  }
}

function purposeOf(row: Row): WorkspaceProcessPurpose {
  return row.target === 'workspace_service' ? 'service' : 'command';
}

/** What the plugin sees: never the pid. */
function summaryOf(row: Row): WorkspaceProcessSummary {
  return {
    executionId: row.id, purpose: purposeOf(row), workspaceRef: row.workspace_ref, label: row.label, status: row.status,
    exitCode: row.exit_code ?? null, signal: row.signal ?? null, errorCode: row.error_code ?? null, logBytes: int(row.log_bytes),
    startedAt: iso(row.started_at), finishedAt: iso(row.finished_at), createdAt: iso(row.created_at)!,
  };
}
