import { PluginError, respondEvents, type RouteRequest, type ServerSentEvent } from '@keel/sdk/plugin';
import { runChannel, type Row, type RuntimeContext } from './context.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { runJson } from './json.ts';
import { executionOf, executionsOf } from './process-facts.ts';
import { cancelRun } from './stopping.ts';
import { lockAgentState } from './wakeups.ts';

const MICROS = `(extract(epoch from created_at) * 1000000)::bigint`;

export async function listRunsRoute(req: RouteRequest, ctx: RuntimeContext) {
  const query = req.query as { agentId?: string; status?: string; limit?: number; cursor?: string };
  const params: unknown[] = [req.companyId];
  let where = 'company_id = $1';
  if (query.agentId) { params.push(query.agentId.toLowerCase()); where += ` and agent_id = $${params.length}`; }
  if (query.status) { params.push(query.status); where += ` and status = $${params.length}`; }
  if (query.cursor) {
    const key = decodeCursor(query.cursor);
    params.push(key.createdMicros, key.id);
    where += ` and (${MICROS}, id) < ($${params.length - 1}::bigint, $${params.length}::uuid)`;
  }
  const limit = query.limit ?? 50;
  params.push(limit + 1);
  const { rows } = await ctx.db.query(`select *, ${MICROS}::text as sort_micros from runs where ${where} order by ${MICROS} desc, id desc limit $${params.length}`, params);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const executions = await executionsOf(ctx, page);
  return { runs: page.map((row) => runJson(row, executions.get(String(row.execution_id)))), nextCursor: rows.length > limit && last ? encodeCursor(String(last.sort_micros), String(last.id)) : null };
}

async function runRow(ctx: RuntimeContext, runId: string): Promise<Row> {
  const { rows } = await ctx.db.query('select * from runs where id = $1 and company_id = $2', [runId, ctx.invocation.companyId]);
  if (!rows[0]) throw new PluginError(404, 'not_found', 'Heartbeat run not found');
  return rows[0];
}

export async function getRunRoute(req: RouteRequest, ctx: RuntimeContext) {
  const run = await runRow(ctx, req.params.runId!);
  return runJson(run, await executionOf(ctx, run));
}

/** A page of the run's NDJSON log (each line `{seq, at, stream, line}`) from the executor's store. */
export async function runLogRoute(req: RouteRequest, ctx: RuntimeContext) {
  const run = await runRow(ctx, req.params.runId!);
  const query = req.query as { offset?: number; limitBytes?: number };
  const offset = query.offset ?? 0;
  if (!run.execution_id) {
    const ended = run.status !== 'queued' && run.status !== 'running';
    return { runId: run.id, content: '', offset, nextOffset: offset, eof: ended };
  }
  const page = await ctx.executions.log(String(run.execution_id), { offset, limitBytes: query.limitBytes ?? 65_536 });
  return { runId: run.id, ...page };
}

const STREAM_LOG_BYTES = 6_000;
const ACTIVE = new Set(['queued', 'running']);

/**
 * Server-sent events: `run` (the run as it is), `log` (the log so far, in pages), then, held,
 * every status change (`status`) and structured output (`output`) as it happens. A client that
 * also wants the plain lines of a running process reads them by offset from the log route.
 */
export async function runStreamRoute(req: RouteRequest, ctx: RuntimeContext) {
  const run = await runRow(ctx, req.params.runId!);
  const initial: ServerSentEvent[] = [{ event: 'run', data: runJson(run, await executionOf(ctx, run)) }];
  if (run.execution_id) {
    let offset = 0;
    for (let page = 0; page < 8; page++) {
      const chunk = await ctx.executions.log(String(run.execution_id), { offset, limitBytes: STREAM_LOG_BYTES });
      if (chunk.content) initial.push({ event: 'log', data: { offset: chunk.offset, nextOffset: chunk.nextOffset, content: chunk.content } });
      offset = chunk.nextOffset;
      if (chunk.eof || !chunk.content) break;
    }
  }
  if (!ACTIVE.has(String(run.status))) return respondEvents([...initial, { event: 'end', data: { status: run.status } }]);
  return respondEvents(initial, { channel: runChannel(String(run.id)) });
}

export async function cancelRunRoute(req: RouteRequest, ctx: RuntimeContext) {
  const found = await runRow(ctx, req.params.runId!);
  // The agent's state first, as dispatch takes it before the run it starts: a cancel racing a
  // start waits for it and then stops what it started, and the two never lock in opposite order.
  await lockAgentState(ctx, String(found.company_id), String(found.agent_id));
  const run = (await ctx.db.query('select * from runs where id = $1 for update', [found.id])).rows[0]!;
  if (run.status === 'cancelled') return runJson(run, await executionOf(ctx, run));
  if (!ACTIVE.has(String(run.status))) {
    throw new PluginError(409, 'run_not_active', `The run is already ${String(run.status)}`, { status: run.status });
  }
  const cancelled = await cancelRun(ctx, run, 'cancelled_by_request');
  return runJson(cancelled, await executionOf(ctx, cancelled));
}
