import { runChannel, type Row, type RuntimeContext } from './context.ts';
import { dispatch } from './dispatch.ts';
import { finishRun, type RunEnd } from './run-end.ts';
import { keepSession } from './sessions.ts';
import { meterUsage } from './usage.ts';
import { firstDelivery } from './handled-events.ts';

interface OutputEvent { executionId: string; runId: string; agentId: string; seq: number; stream: 'stdout' | 'sse'; data: Record<string, unknown> }
interface FinishedEvent {
  executionId: string; runId: string; agentId: string; status: string; exitCode: number | null; signal: string | null;
  httpStatus: number | null; errorCode: string | null; logBytes: number; logSha256?: string | null; response: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
/** The largest output event relayed to a run's stream as it is (the hub takes 7,000 bytes). */
const MAX_RELAYED = 6_000;

async function runOf(ctx: RuntimeContext, runId: string): Promise<Row | undefined> {
  const { rows } = await ctx.db.query('select * from runs where id = $1 and company_id = $2 for update', [runId, ctx.invocation.companyId]);
  return rows[0];
}

/**
 * `execution.output`: a stdout line that is a JSON object with a string `type` (or an SSE event
 * of a streamed http execution). The protocol (docs/api/runtime.md): `service.usage` is metered
 * at once, `service.result` sets the run's resultJson, `service.session` (or a sessionId on the
 * result) keeps the adapter session for the agent's task. Every output goes to the run's stream.
 */
export async function onExecutionOutput(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  if (!(await firstDelivery(ctx))) return;
  const event = payload as unknown as OutputEvent;
  const run = await runOf(ctx, event.runId);
  if (!run || !isObject(event.data)) return;
  const line = event.stream === 'sse' && isObject(event.data.data) ? event.data.data : event.data;
  const type = line.type;
  if (type === 'service.usage') await meterUsage(ctx, run, line, `usage-${event.executionId}-${event.seq}`);
  if (type === 'service.result') {
    const result = Object.hasOwn(line, 'result') ? line.result : withoutType(line);
    await ctx.db.query('update runs set result_json = $2::jsonb, updated_at = clock_timestamp() where id = $1', [run.id, JSON.stringify(result ?? null)]);
  }
  if ((type === 'service.result' || type === 'service.session') && typeof line.sessionId === 'string') await keepSession(ctx, run, line.sessionId);
  const relayed = { event: 'output', seq: event.seq, stream: event.stream, data: event.data };
  await ctx.streams.publish(runChannel(String(run.id)), JSON.stringify(relayed).length <= MAX_RELAYED ? relayed : { event: 'output', seq: event.seq, stream: event.stream, truncated: true, type: typeof type === 'string' ? type : null });
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
export async function onExecutionFinished(payload: Record<string, unknown>, ctx: RuntimeContext): Promise<void> {
  if (!(await firstDelivery(ctx))) return;
  const event = payload as unknown as FinishedEvent;
  const run = await runOf(ctx, event.runId);
  if (!run) return;
  const response = isObject(event.response) ? event.response : null;
  if (response) {
    if (isObject(response.usage)) await meterUsage(ctx, run, response.usage, `usage-${event.executionId}-response`);
    if (typeof response.sessionId === 'string') await keepSession(ctx, run, response.sessionId);
  }
  const current = (await runOf(ctx, event.runId))!;
  await finishRun(ctx, current, {
    status: RUN_STATUS[event.status] ?? 'failed', exitCode: event.exitCode, signal: event.signal, httpStatus: event.httpStatus,
    errorCode: event.errorCode, logBytes: event.logBytes, logSha256: event.logSha256 ?? null,
    result: response ?? (event.response === undefined ? undefined : event.response),
    error: event.errorCode ?? (event.exitCode !== null && event.exitCode !== 0 ? `exit code ${event.exitCode}` : null),
  });
  await dispatch(ctx, String(run.agent_id));
}
