import { PluginError, refusedRunVariable, respond, type RouteRequest, type WorkspaceProcessSummary } from '@keel/sdk/plugin';
import type { EnvironmentsContext } from './context.ts';
import { operationJson, time } from './json.ts';

type Body = Record<string, unknown>;
type Row = Record<string, unknown>;

/**
 * A workspace's runtime services (long-running processes: start, stop, restart) and workspace
 * commands (jobs that run to an exit code: run). The definitions are the execution workspace's
 * own (`runtimeServices`, `workspaceCommands`), written by board users only: an agent cannot
 * define what the board then runs. Starting and stopping need a board user too, and the kernel
 * checks it again (ctx.workspaceProcesses runs them as the agent user, in the workspace's cwd
 * confined to the folder an operator mounted for the company).
 */
export interface ServiceDefinition {
  id: string; name: string; command: string; args?: string[]; env?: Record<string, unknown>;
  port?: number; url?: string; graceSec?: number;
}
export interface CommandDefinition { id: string; name: string; command: string; args?: string[]; env?: Record<string, unknown>; timeoutSec?: number }

const SERVICE_ACTIONS = new Set(['start', 'stop', 'restart']);
const LIVE = new Set(['starting', 'running']);

export function assertBoardUser(ctx: EnvironmentsContext, what: string): void {
  if (ctx.invocation.actor.type !== 'user') throw new PluginError(403, 'board_user_required', `${what}: board users only`);
}

/** The definitions of a PATCH: unique ids, variable names the kernel accepts. Board users only. */
export function checkDefinitions(ctx: EnvironmentsContext, body: Body): void {
  for (const field of ['runtimeServices', 'workspaceCommands'] as const) {
    const list = body[field] as Array<{ id: string; env?: Record<string, unknown> }> | undefined;
    if (list === undefined) continue;
    assertBoardUser(ctx, `${field} defines what the workspace runs`);
    const seen = new Set<string>();
    for (const [index, definition] of list.entries()) {
      if (seen.has(definition.id)) throw new PluginError(422, 'duplicate_definition_id', `${field}[${index}].id: "${definition.id}" is used twice`, { field: `${field}[${index}].id` });
      seen.add(definition.id);
      for (const name of Object.keys(definition.env ?? {})) {
        const why = refusedRunVariable(name);
        if (why) throw new PluginError(422, 'workspace_env_refused', `${field}[${index}].env: "${name}" ${why}`, { field: `${field}[${index}].env`, name });
      }
    }
  }
}

/** A kernel refusal as the route's answer (its status and code), anything else as it is. */
function kernelRefusal(error: unknown): never {
  const found = error as { status?: unknown; code?: unknown; message?: unknown; details?: unknown };
  if (typeof found?.status === 'number' && typeof found.code === 'string' && found.status >= 400 && found.status < 500) {
    throw new PluginError(found.status, found.code, String(found.message ?? found.code), found.details);
  }
  throw error;
}

/** What a service's state becomes once its execution ended. */
export function endedServiceStatus(summary: { status: string; exitCode: number | null; signal: string | null }): string {
  if (summary.status === 'cancelled') return 'stopped';
  if (summary.status === 'lost' || summary.status === 'timed_out') return 'failed';
  if (summary.exitCode !== null || summary.signal !== null) return 'exited';
  return LIVE.has(summary.status) ? summary.status : 'failed';
}

export function runtimeServiceJson(definition: ServiceDefinition, state: Row | undefined) {
  return {
    id: definition.id, name: definition.name, command: definition.command, args: definition.args ?? [], env: definition.env ?? {},
    port: definition.port ?? null, url: definition.url ?? null,
    status: state ? String(state.status) : 'stopped', executionId: state?.execution_id ?? null, operationId: state?.operation_id ?? null,
    exitCode: state?.exit_code ?? null, signal: state?.signal ?? null, errorCode: state?.error_code ?? null,
    startedAt: time(state?.started_at), stoppedAt: time(state?.stopped_at),
  };
}

async function states(ctx: EnvironmentsContext, workspaceId: unknown): Promise<Map<string, Row>> {
  const { rows } = await ctx.db.query('select * from workspace_runtime_services where execution_workspace_id = $1', [workspaceId]);
  return new Map(rows.map((row) => [String(row.service_id), row]));
}

/**
 * The definitions with their state. A live state is read from the kernel as it is now (the
 * start answers `starting`; the end arrives with execution.finished a moment after the process
 * ended), so the list never shows a service running that the kernel knows has ended.
 */
export async function listRuntimeServices(ctx: EnvironmentsContext, workspace: Row) {
  const found = await states(ctx, workspace.id);
  const listed = [];
  for (const definition of (workspace.runtime_services ?? []) as ServiceDefinition[]) {
    let state = found.get(definition.id);
    if (state && LIVE.has(String(state.status))) {
      const now = await ctx.workspaceProcesses.get(String(state.execution_id)).catch(() => null);
      if (now && now.status !== 'starting') {
        state = LIVE.has(now.status) ? { ...state, status: now.status }
          : { ...state, status: endedServiceStatus(now), exit_code: now.exitCode, signal: now.signal, error_code: now.errorCode, stopped_at: now.finishedAt };
      }
    }
    listed.push(runtimeServiceJson(definition, state));
  }
  return listed;
}

/** How many services of the workspace run now (close readiness). */
export async function runningServices(ctx: EnvironmentsContext, workspaceId: unknown): Promise<number> {
  const { rows } = await ctx.db.query("select count(*)::int as n from workspace_runtime_services where execution_workspace_id = $1 and status in ('starting', 'running')", [workspaceId]);
  return Number(rows[0]!.n);
}

function pickService(workspace: Row, body: Body): ServiceDefinition {
  const services = (workspace.runtime_services ?? []) as ServiceDefinition[];
  let found: ServiceDefinition | undefined;
  if (typeof body.runtimeServiceId === 'string') found = services.find((service) => service.id === body.runtimeServiceId);
  else if (typeof body.serviceIndex === 'number') found = services[body.serviceIndex];
  else if (services.length === 1) found = services[0];
  else throw new PluginError(422, 'runtime_service_required', 'Name the service: runtimeServiceId or serviceIndex', { field: 'runtimeServiceId' });
  if (!found) throw new PluginError(422, 'runtime_service_not_found', 'No runtime service of this workspace has this id or index', { field: typeof body.serviceIndex === 'number' ? 'serviceIndex' : 'runtimeServiceId' });
  return found;
}

function pickCommand(workspace: Row, body: Body): CommandDefinition {
  if (typeof body.workspaceCommandId !== 'string') throw new PluginError(422, 'workspace_command_required', 'Name the command: workspaceCommandId', { field: 'workspaceCommandId' });
  const found = ((workspace.workspace_commands ?? []) as CommandDefinition[]).find((command) => command.id === body.workspaceCommandId);
  if (!found) throw new PluginError(422, 'workspace_command_not_found', 'No workspace command of this workspace has this id', { field: 'workspaceCommandId' });
  return found;
}

type Record_ = (status: string, message: string, details: Record<string, unknown>, action: string, executionId?: string | null) => Promise<Row>;

/**
 * One action on a locked, open workspace with a cwd (the caller checked all three). Answers
 * 202 with the operation for a start, a restart and a run (their result arrives with the
 * execution's end), 200 for a stop (the kernel waits for the process to end).
 */
export async function runtimeActionOn(ctx: EnvironmentsContext, workspace: Row, action: string, body: Body, record: Record_) {
  assertBoardUser(ctx, 'Workspace services and commands run');
  if (action === 'run') {
    const command = pickCommand(workspace, body);
    const summary = await ctx.workspaceProcesses.start({
      purpose: 'command', workspaceRef: String(workspace.id), label: command.name, cwd: String(workspace.cwd), command: command.command,
      args: command.args ?? [], env: (command.env ?? {}) as Record<string, string>, ...(command.timeoutSec ? { timeoutSec: command.timeoutSec } : {}),
    }).catch(kernelRefusal);
    return recordedOrStopped(ctx, summary, async () => {
      const operation = await record('running', `Running ${command.name}`, { workspaceCommandId: command.id, executionId: summary.executionId }, action, summary.executionId);
      await ctx.activity.record({ action: 'execution_workspace.command_started', entityType: 'execution_workspace', entityId: String(workspace.id), details: { workspaceCommandId: command.id, executionId: summary.executionId } });
      return respond(202, { operation: operationJson(operation) });
    });
  }
  if (!SERVICE_ACTIONS.has(action)) throw new PluginError(404, 'not_found', 'Workspace command action not found');
  const service = pickService(workspace, body);
  const current = (await states(ctx, workspace.id)).get(service.id);
  let stopped: WorkspaceProcessSummary | null = null;
  if (action === 'stop' || action === 'restart') {
    if (current && LIVE.has(String(current.status))) {
      stopped = await ctx.workspaceProcesses.stop(String(current.execution_id), { reason: `${action} by the board` }).catch(kernelRefusal);
      if (LIVE.has(stopped.status)) {
        throw new PluginError(409, 'runtime_service_still_running', 'The service was asked to stop but has not ended yet; read its status again', { executionId: stopped.executionId });
      }
      await ctx.db.query(
        `update workspace_runtime_services set status = $2, exit_code = $3, signal = $4, error_code = $5, stopped_at = coalesce(stopped_at, now())
          where id = $1 and status in ('starting', 'running')`,
        [current.id, endedServiceStatus(stopped), stopped.exitCode, stopped.signal, stopped.errorCode]);
    }
    if (action === 'stop') {
      const operation = await record('succeeded', stopped ? `Stopped ${service.name}` : `${service.name} was not running`, { runtimeServiceId: service.id, executionId: stopped?.executionId ?? null }, action);
      await ctx.activity.record({ action: 'execution_workspace.service_stopped', entityType: 'execution_workspace', entityId: String(workspace.id), details: { runtimeServiceId: service.id } });
      const after = (await states(ctx, workspace.id)).get(service.id);
      return { operation: operationJson(operation), runtimeService: runtimeServiceJson(service, after) };
    }
  } else if (current && LIVE.has(String(current.status))) {
    throw new PluginError(409, 'runtime_service_running', `${service.name} is already running; stop or restart it`, { runtimeServiceId: service.id });
  }
  const summary = await ctx.workspaceProcesses.start({
    purpose: 'service', workspaceRef: String(workspace.id), label: service.name, cwd: String(workspace.cwd), command: service.command,
    args: service.args ?? [], env: (service.env ?? {}) as Record<string, string>, ...(service.graceSec !== undefined ? { graceSec: service.graceSec } : {}),
  }).catch(kernelRefusal);
  return recordedOrStopped(ctx, summary, async () => {
    const operation = await record('running', `${action === 'restart' ? 'Restarted' : 'Started'} ${service.name}`, { runtimeServiceId: service.id, executionId: summary.executionId }, action, summary.executionId);
    await ctx.db.query(
      `insert into workspace_runtime_services (company_id, execution_workspace_id, service_id, execution_id, operation_id, status)
       values ($1, $2, $3, $4, $5, $6)
       on conflict (execution_workspace_id, service_id) do update set execution_id = excluded.execution_id, operation_id = excluded.operation_id,
         status = excluded.status, exit_code = null, signal = null, error_code = null, started_at = now(), stopped_at = null`,
      [workspace.company_id, workspace.id, service.id, summary.executionId, operation.id, summary.status]);
    await ctx.activity.record({ action: `execution_workspace.service_${action === 'restart' ? 'restarted' : 'started'}`, entityType: 'execution_workspace', entityId: String(workspace.id), details: { runtimeServiceId: service.id, executionId: summary.executionId } });
    const after = (await states(ctx, workspace.id)).get(service.id);
    return respond(202, { operation: operationJson(operation), runtimeService: runtimeServiceJson(service, after) });
  });
}

/**
 * The kernel starts a process outside this call's transaction: when recording it fails, the
 * process is stopped again rather than left running where the workspace does not list it.
 */
async function recordedOrStopped<T>(ctx: EnvironmentsContext, started: WorkspaceProcessSummary, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    await ctx.workspaceProcesses.stop(started.executionId, { reason: 'its start could not be recorded', waitMs: 0 }).catch(() => undefined);
    throw error;
  }
}

/**
 * `execution.finished` of a workspace process this plugin started: the service's state and the
 * operation that started it (or the command's run) take the result. Idempotent: only rows still
 * live change.
 */
export async function onExecutionFinished(payload: Record<string, unknown>, ctx: EnvironmentsContext): Promise<void> {
  const executionId = String(payload.executionId ?? '');
  if (!executionId || payload.runId) return;
  const summary = { status: String(payload.status), exitCode: (payload.exitCode ?? null) as number | null, signal: (payload.signal ?? null) as string | null };
  const errorCode = (payload.errorCode ?? null) as string | null;
  await ctx.db.query(
    `update workspace_runtime_services set status = $2, exit_code = $3, signal = $4, error_code = $5, stopped_at = coalesce(stopped_at, now())
      where execution_id = $1 and status in ('starting', 'running')`,
    [executionId, endedServiceStatus(summary), summary.exitCode, summary.signal, errorCode]);
  let timing: { startedAt: string | null; finishedAt: string | null } = { startedAt: null, finishedAt: null };
  try { timing = await ctx.workspaceProcesses.get(executionId); } catch { /* another company's or gone: the result stands without its duration */ }
  const durationMs = timing.startedAt && timing.finishedAt ? Date.parse(timing.finishedAt) - Date.parse(timing.startedAt) : null;
  // A service stopped on purpose ended as asked; any other end of a service, and a command's non-zero exit, failed.
  const { rows } = await ctx.db.query('select * from workspace_operations where execution_id = $1 and status = $2', [executionId, 'running']);
  for (const operation of rows) {
    const service = operation.kind === 'runtime_service' || ['start', 'restart'].includes(String(operation.action));
    const ok = service ? summary.status === 'cancelled' : summary.status === 'succeeded';
    await ctx.db.query(
      `update workspace_operations set status = $2, finished_at = now(), details = coalesce(details, '{}'::jsonb) || $3::jsonb where id = $1 and status = 'running'`,
      [operation.id, ok ? 'succeeded' : 'failed', JSON.stringify({ executionStatus: summary.status, exitCode: summary.exitCode, signal: summary.signal, errorCode, durationMs })]);
  }
}

/** The log of an operation's execution (NDJSON records `{seq, at, stream, line}`), by byte offset. */
export async function operationLog(req: RouteRequest, ctx: EnvironmentsContext) {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(String(req.params.operationId))) throw new PluginError(404, 'not_found', 'Workspace operation not found');
  const { rows } = await ctx.db.query('select * from workspace_operations where id = $1 and execution_workspace_id = $2 and company_id = $3',
    [req.params.operationId, req.params.id, req.companyId]);
  const operation = rows[0];
  if (!operation) throw new PluginError(404, 'not_found', 'Workspace operation not found');
  if (!operation.execution_id) throw new PluginError(404, 'log_not_found', 'This operation ran no process and has no log');
  const offset = req.query.offset === undefined ? 0 : Number(req.query.offset);
  const limitBytes = req.query.limitBytes === undefined ? 65_536 : Number(req.query.limitBytes);
  const page = await ctx.workspaceProcesses.log(String(operation.execution_id), { offset, limitBytes }).catch(kernelRefusal);
  // Whole records only: a page cut by limitBytes ends (and one read from an arbitrary offset starts) inside one.
  const lines = page.content.split('\n').flatMap((record) => {
    try { return [JSON.parse(record) as { seq: number; at: string; stream: string; line: string }]; } catch { return []; }
  });
  return { operationId: operation.id, executionId: operation.execution_id, ...page, lines };
}
