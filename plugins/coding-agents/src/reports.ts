import type { ExecutionFinishedEvent, ExecutionOutput, ExecutionOutputEvent } from '@keel/sdk/plugin';
import { resultText, withAnswer, withResultText } from './answer.ts';
import type { CodingAgentsContext, Row } from './context.ts';
import type { Failure, ParsedLine, ToolDriver } from './tools/driver.ts';
import { localConfig } from './config.ts';
import { driverFor } from './tools/index.ts';
import { usageLine } from './usage.ts';

/** The source line the note of a fresh start is filed under (past any real line's sequence number). */
const RETRY_NOTE_SEQ = 1_000_000_000_000;
/** How much of the log's end a failure is classified from. */
const TAIL_BYTES = 32_768;

async function toolRun(ctx: CodingAgentsContext, runId: string | null): Promise<{ row: Row; driver: ToolDriver } | null> {
  if (!runId) return null;
  const { rows } = await ctx.db.query('select * from tool_runs where run_id = $1 for update', [runId]);
  const driver = rows[0] ? driverFor(String(rows[0].adapter_type)) : null;
  return rows[0] && driver ? { row: rows[0], driver } : null;
}

/** A line the driver cannot read (it threw) is kept as a log entry: nothing a tool prints can hold back the run's later lines. */
function parse(parser: ReturnType<ToolDriver['parser']>, data: Record<string, unknown>): ParsedLine {
  try {
    return parser.line(data);
  } catch {
    return { transcript: [{ kind: 'log', line: JSON.stringify(data).slice(0, 4_000) }] };
  }
}

/**
 * `execution.output`: each structured line of the tool, read by its driver, handed to the
 * runtime in its protocol: `service.transcript` (the line's entries), `service.session` (a new
 * session id, kept for the task), `service.usage` (metered at once, so a hard stop ends the run
 * while the tool works). The result and a failure the output named are kept for the end.
 */
export async function onExecutionOutput(event: ExecutionOutputEvent, ctx: CodingAgentsContext): Promise<void> {
  const found = await toolRun(ctx, event.runId);
  if (!found) return;
  const { row, driver } = found;
  // The agent's configuration tells the parser what the tool's lines may not (Codex's events never name the model).
  const agent = await ctx.agents.getConfig(String(row.agent_id));
  const parser = driver.parser(agent ? localConfig(driver, agent.adapterConfig) : undefined);
  const outputs: ExecutionOutput[] = [];
  for (const output of event.outputs) {
    const parsed = parse(parser, output.data);
    const emit = (data: Record<string, unknown>) => outputs.push({ seq: output.seq, stream: 'stdout', data });
    row.result = withAnswer(row.result, parsed);
    if (parsed.transcript && parsed.transcript.length > 0) emit({ type: 'service.transcript', entries: withResultText(parsed.transcript, row.result as Row | null) });
    if (parsed.sessionId && parsed.sessionId !== row.session_id) {
      row.session_id = parsed.sessionId;
      emit({ type: 'service.session', sessionId: parsed.sessionId });
    }
    if (parsed.usage) {
      row.saw_usage = true;
      const line = await usageLine(ctx, row, typeof row.session_id === 'string' ? row.session_id : null, parsed.usage);
      if (line) emit(line);
    }
    if (parsed.result) row.saw_result = true;
    if (parsed.failure) row.failure = parsed.failure;
  }
  await ctx.db.query(
    `update tool_runs set session_id = $2, saw_usage = $3, saw_result = $4, result = $5::jsonb, failure = $6::jsonb, updated_at = now() where run_id = $1`,
    [row.run_id, row.session_id ?? null, row.saw_usage === true, row.saw_result === true, JSON.stringify(row.result ?? null), JSON.stringify(row.failure ?? null)]);
  if (outputs.length === 0) return;
  await ctx.services.call('runtime', 'adapter-report', {
    executionId: event.executionId, runId: event.runId, outputs, recordedAt: ctx.invocation.event?.occurredAt ?? null,
  }, reportKey(ctx, 'output'));
}

/** The plain text of the log's last TAIL_BYTES (each NDJSON record's line). */
async function logTail(ctx: CodingAgentsContext, executionId: string, logBytes: number): Promise<string> {
  const page = await ctx.executions.log(executionId, { offset: Math.max(0, logBytes - TAIL_BYTES), limitBytes: TAIL_BYTES });
  const lines: string[] = [];
  for (const record of page.content.split('\n')) {
    try {
      const parsed = JSON.parse(record) as { line?: unknown };
      if (typeof parsed.line === 'string') lines.push(parsed.line);
    } catch { /* the first record may start mid-way */ }
  }
  return lines.join('\n');
}

/**
 * `execution.finished`: the run ends as its tool did, classified: a tool that could not be
 * started is not installed (adapter_unavailable, naming the install command); a failed exit is
 * read from the log's tail by the driver (authentication, rate limit, quota, unknown session,
 * max turns, crash); an exit 0 whose result was an error fails too. The result is resultJson,
 * with `usageUnknown` when the tool ended before it reported usage and the session it left.
 */
export async function onExecutionFinished(event: ExecutionFinishedEvent, ctx: CodingAgentsContext): Promise<void> {
  const found = await toolRun(ctx, event.runId);
  if (!found) return;
  const { row, driver } = found;
  let status: string = event.status;
  let failure: Failure | null = null;
  if (event.errorCode === 'spawn_failed') {
    const config = await ctx.agents.getConfig(String(row.agent_id));
    const command = typeof config?.adapterConfig.command === 'string' ? config.adapterConfig.command : driver.executable;
    failure = { errorCode: 'adapter_unavailable', message: `${driver.displayName} could not be started: ${command} is not installed where this instance runs agents (or not executable by the agent user). Install it: ${driver.install}` };
  } else if (status === 'failed' || (status === 'succeeded' && row.failure)) {
    const tail = await logTail(ctx, event.executionId, event.logBytes);
    failure = (row.failure as Failure | null) ?? driver.classify({ exitCode: event.exitCode, signal: event.signal, logTail: tail, sawResult: row.saw_result === true })
      ?? { errorCode: 'tool_crashed', message: `${driver.displayName} exited with ${event.signal ? `signal ${event.signal}` : `code ${event.exitCode}`}; its log says why` };
    status = 'failed';
  }
  const result = (row.saw_result ? row.result ?? null : null) as { text?: string | null; isError?: boolean; subtype?: string; turns?: number; durationMs?: number } | null;
  const retried = event.attempts === 2;
  const response = {
    result: resultText((row.result ?? null) as Row | null), isError: result?.isError ?? status !== 'succeeded', ...(result?.subtype ? { subtype: result.subtype } : {}),
    ...(typeof result?.turns === 'number' ? { turns: result.turns } : {}), ...(typeof result?.durationMs === 'number' ? { durationMs: result.durationMs } : {}),
    sessionId: row.session_id ?? null, ...(row.saw_usage ? {} : { usageUnknown: true }),
    // Served through Keel's model gateway: its cost events are the gateway's; the tool's own usage is the run's usage.toolReported.
    ...(row.gateway_provider_id ? { modelGateway: { providerId: row.gateway_provider_id } } : {}),
    ...(retried ? { resumeRefused: { sessionId: row.session_before, startedFresh: true } } : {}),
    ...(failure?.retryAt ? { retryAt: failure.retryAt } : {}),
  };
  if (retried) {
    await ctx.services.call('runtime', 'adapter-report', {
      executionId: event.executionId, runId: event.runId,
      outputs: [{ seq: RETRY_NOTE_SEQ, stream: 'stdout', data: { type: 'service.transcript', entries: [{ kind: 'system', message: `${driver.displayName} no longer had session ${String(row.session_before)}: the run started a fresh session` }] } }],
    }, reportKey(ctx, 'retried'));
  }
  await ctx.services.call('runtime', 'adapter-report', {
    executionId: event.executionId, runId: event.runId,
    finished: {
      status, exitCode: event.exitCode, signal: event.signal, errorCode: failure?.errorCode ?? event.errorCode, error: failure?.message ?? null,
      logBytes: event.logBytes, response,
    },
  }, reportKey(ctx, 'finished'));
  await ctx.db.query('delete from tool_runs where run_id = $1', [row.run_id]);
}

/** A redelivered event hands over the same report, which the runtime then runs once. */
function reportKey(ctx: CodingAgentsContext, kind: string): { idempotencyKey: string } | undefined {
  const id = ctx.invocation.event?.id;
  return id ? { idempotencyKey: `${kind}-${id}` } : undefined;
}
