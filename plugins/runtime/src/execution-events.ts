import { PluginError, type ExecutionFinishedEvent, type ExecutionOutputEvent } from '@keel/sdk/plugin';
import { contributorOf, runChannel, type Row, type RuntimeContext } from './context.ts';
import { dispatch } from './dispatch.ts';
import { finishRun, type RunEnd } from './run-end.ts';
import { lockAgentState } from './wakeups.ts';
import { keepSession } from './sessions.ts';
import { countUnmetered, keepToolReported, meterUsage, type UsageSource } from './usage.ts';
import { meteringOf } from './after-stop.ts';
import { firstDelivery } from './handled-events.ts';
import { keepTranscript } from './transcript.ts';
import { executorHas } from './process-facts.ts';

interface Output { seq: number; stream: 'stdout' | 'sse'; data: Record<string, unknown> }
interface OutputEvent { executionId: string; runId: string; agentId: string; outputs: Output[] }
interface FinishedEvent {
  executionId: string; runId: string; agentId: string; status: string; exitCode: number | null; signal: string | null;
  httpStatus: number | null; errorCode: string | null; logBytes: number; logSha256?: string | null; response: unknown;
  /** What went wrong, in words an operator can act on (a contributed adapter's classification); else the exit code says it. */
  error?: string | null;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
/** The largest output event relayed to a run's stream as it is (the hub takes 7,000 bytes). */
const MAX_RELAYED = 6_000;
/** The plugin that runs agents on run servers (plugins/remote-runner). */
const REMOTE_RUNNER = 'remote-runner';

/**
 * The run, locked, after its agent's state: every path takes an agent's state before a run of
 * it (dispatch holds the state while it starts a run), so an output or end arriving while the
 * run is being started waits for that start instead of deadlocking with it. A heartbeat starts
 * the run in the transaction that stores it, so until that commits its row is not seen here: its
 * agent is then read from the run ledger (committed when the run was opened), and the lock on
 * the agent's state waits for the start's commit.
 */
async function runOf(ctx: RuntimeContext, runId: string): Promise<Row | undefined> {
  const { rows: [found] } = await ctx.db.query('select agent_id from runs where id = $1 and company_id = $2', [runId, ctx.invocation.companyId]);
  const agentId = found ? String(found.agent_id) : (await ctx.runs.get([runId]))[0]?.agentId;
  if (!agentId) return undefined;
  await lockAgentState(ctx, String(ctx.invocation.companyId), agentId);
  const { rows } = await ctx.db.query('select * from runs where id = $1 and company_id = $2 for update', [runId, ctx.invocation.companyId]);
  return rows[0];
}

/**
 * `execution.output`: the structured outputs of one batch of the run's log, in line order (a
 * stdout line that is a JSON object with a string `type`, or an SSE event of a streamed http
 * execution). The protocol (docs/api/runtime.md): the batch's `service.usage` reports are
 * metered at once, together; `service.result` sets the run's resultJson, `service.session` (or a
 * sessionId on the result) keeps the adapter session for the agent's task. Every output goes to
 * the run's stream.
 */
export async function onExecutionOutput(event: ExecutionOutputEvent, ctx: RuntimeContext): Promise<void> {
  if (!(await firstDelivery(ctx))) return;
  await applyOutputs(ctx, event, ctx.invocation.event?.occurredAt ?? null, 'adapter', true);
}

/** `recordedAt`: when the executor recorded the outputs (their event's time); usage after the run's stop is metered only if in flight (after-stop.ts). */
async function applyOutputs(ctx: RuntimeContext, event: OutputEvent, recordedAt: string | null, source: UsageSource = 'adapter', firstHandling = false): Promise<void> {
  const run = await runOf(ctx, event.runId);
  if (!run || !Array.isArray(event.outputs)) return;
  const lines = event.outputs.filter((output) => isObject(output.data)).map((output) => ({
    output, line: output.stream === 'sse' && isObject(output.data.data) ? output.data.data : output.data,
  }));
  const reported = lines.filter(({ line }) => line.type === 'service.usage');
  // Usage of calls the model gateway metered itself: kept beside the run, never charged twice.
  const gatewayServed = reported.filter(({ line }) => line.meteredBy === 'gateway');
  if (gatewayServed.length > 0) await keepToolReported(ctx, run, gatewayServed.map(({ line }) => line));
  const usage = reported.filter(({ line }) => line.meteredBy !== 'gateway');
  if (usage.length > 0) {
    const metering = meteringOf(run, recordedAt);
    if (metering.kind === 'after_stop') await countUnmetered(ctx, run, usage.length);
    else await meterUsage(ctx, run, usage.map(({ output, line }) => ({ data: line, sourceKey: `usage-${event.executionId}-${output.seq}` })), metering.kind === 'in_flight' ? metering.recordedAt : null, source, firstHandling);
  }
  for (const { output, line } of lines) {
    if (line.type === 'service.transcript' && Array.isArray(line.entries)) await keepTranscript(ctx, run, output.seq, line.entries.slice(0, 100));
  }
  for (const { line } of lines) {
    if (line.type === 'service.result') {
      const result = Object.hasOwn(line, 'result') ? line.result : withoutType(line);
      await ctx.db.query('update runs set result_json = $2::jsonb, updated_at = clock_timestamp() where id = $1', [run.id, JSON.stringify(result ?? null)]);
    }
    if ((line.type === 'service.result' || line.type === 'service.session') && typeof line.sessionId === 'string') await keepSession(ctx, run, line.sessionId);
  }
  for (const { output, line } of lines) {
    // Transcript entries went to the stream one by one, as `transcript` events.
    if (line.type === 'service.transcript') continue;
    const relayed = { event: 'output', seq: output.seq, stream: output.stream, data: output.data };
    await ctx.streams.publish(runChannel(String(run.id)), JSON.stringify(relayed).length <= MAX_RELAYED ? relayed
      : { event: 'output', seq: output.seq, stream: output.stream, truncated: true, type: typeof line.type === 'string' ? line.type : null });
  }
}

function withoutType(line: Record<string, unknown>): Record<string, unknown> {
  const { type: _type, sessionId: _session, ...rest } = line;
  return rest;
}

const RUN_STATUS: Record<string, RunEnd['status']> = { succeeded: 'succeeded', failed: 'failed', cancelled: 'cancelled', timed_out: 'timed_out', lost: 'lost' };

/**
 * `execution.finished`: the run ends with the execution's status, exit code, signal and log
 * size (the executor closed the ledger run in the same step). An http answer's JSON becomes
 * resultJson, its `usage` a cost event and its `sessionId` the task's session. Then the agent's
 * next queued run may start.
 */
export async function onExecutionFinished(event: ExecutionFinishedEvent, ctx: RuntimeContext): Promise<void> {
  if (!(await firstDelivery(ctx))) return;
  // A workspace process has no run (nor agent): nothing of the runtime's to end.
  const { runId, agentId } = event;
  if (runId === null || agentId === null) return;
  await applyFinished(ctx, { ...event, runId, agentId }, 'adapter', false, true);
}

/** `reported`: the end came from a contributed adapter's plugin (adapter-report), not from the executor's own event. */
async function applyFinished(ctx: RuntimeContext, event: FinishedEvent, source: UsageSource = 'adapter', reported = false, firstHandling = false): Promise<void> {
  const run = await runOf(ctx, event.runId);
  if (!run) return;
  const response = isObject(event.response) ? event.response : null;
  if (response) {
    if (isObject(response.usage)) await meterUsage(ctx, run, [{ data: response.usage, sourceKey: `usage-${event.executionId}-response` }], null, source, firstHandling);
    if (typeof response.sessionId === 'string') await keepSession(ctx, run, response.sessionId);
  }
  // Metering and the session write the run's row: read it again after them (the locks are held already).
  const current = response ? (await runOf(ctx, event.runId))! : run;
  await finishRun(ctx, current, {
    status: RUN_STATUS[event.status] ?? 'failed', exitCode: event.exitCode, signal: event.signal, httpStatus: event.httpStatus,
    errorCode: event.errorCode, logBytes: event.logBytes, logSha256: event.logSha256 ?? null,
    result: response ?? (event.response === undefined ? undefined : event.response),
    error: event.error ?? event.errorCode ?? (event.exitCode !== null && event.exitCode !== 0 ? `exit code ${event.exitCode}` : null),
    // The executor's execution holds its process facts; a report is kept only for a run the executor has no execution of.
    keepProcessFacts: reported && !(await executorHas(ctx, event.executionId)),
  });
  await dispatch(ctx, String(run.agent_id));
}

interface AdapterReport { executionId: string; runId: string; outputs?: Output[]; recordedAt?: string | null; finished?: Partial<FinishedEvent> & { status: string } }

/**
 * The `adapter-report` service: the plugin that contributes a run's adapter type hands over
 * its execution's outputs (in the protocol above) and its end, which are handled as this
 * plugin's own executions' events. Only that plugin, only for the execution the run started
 * with (else 404, nothing changes); a repeated report changes nothing more (usage is keyed by
 * execution and sequence, a run ends once).
 */
export async function adapterReportService(input: unknown, ctx: RuntimeContext): Promise<{ ok: boolean }> {
  const report = input as AdapterReport;
  const run = await runOf(ctx, report.runId);
  const caller = ctx.invocation.caller?.plugin ?? null;
  const agent = run ? await ctx.agents.getConfig(String(run.agent_id)) : null;
  if (!run || !caller || run.execution_id !== report.executionId || (await contributorOf(ctx, agent?.adapterType)) !== caller) {
    throw new PluginError(404, 'run_not_found', 'No run of this plugin has that execution');
  }
  const ids = { executionId: report.executionId, runId: String(run.id), agentId: String(run.agent_id) };
  // The usage a run server reported for a remote run is recorded as such (cost source
  // remote_runner); the caller is the kernel's word, so no other plugin can claim it.
  const source: UsageSource = caller === REMOTE_RUNNER ? 'remote_runner' : 'adapter';
  if (report.outputs && report.outputs.length > 0) await applyOutputs(ctx, { ...ids, outputs: report.outputs }, typeof report.recordedAt === 'string' ? report.recordedAt : null, source);
  if (report.finished) {
    const end = report.finished;
    await applyFinished(ctx, {
      ...ids, status: end.status, exitCode: end.exitCode ?? null, signal: end.signal ?? null, httpStatus: end.httpStatus ?? null, errorCode: end.errorCode ?? null,
      logBytes: end.logBytes ?? 0, logSha256: end.logSha256 ?? null, response: end.response ?? null, error: end.error ?? null,
    }, source, true);
  }
  return { ok: true };
}
