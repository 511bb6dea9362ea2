import type { ExecutionFinishedEvent, ExecutionOutput, ExecutionOutputEvent } from '@keel/sdk/plugin';
import type { RemoteRunnerContext } from './context.ts';
import { appendText, explicitResultOf, streamedResult, textDeltaOf } from './run-text.ts';
import { TERMINAL_EVENTS } from './start.ts';
import { COUNTERS, usageTotalsOf, type Totals } from './usage-vocabulary.ts';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const column = (counter: string) => counter.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
/** The longest event name read from an event's data (longer ones keep the stream's name). */
const MAX_EVENT_NAME = 100;

/**
 * An event's name: the stream's `event:` field, or, for an event sent without one (the SSE
 * default `message`), the `event` field of its data, as the reference run servers name theirs
 * (`data: {"event": "message.delta", ...}`).
 */
function eventNameOf(output: ExecutionOutput): string {
  const streamed = typeof output.data.event === 'string' ? output.data.event : 'message';
  const data = output.data.data;
  if (streamed === 'message' && isObject(data) && typeof data.event === 'string' && data.event.length > 0 && data.event.length <= MAX_EVENT_NAME) return data.event;
  return streamed;
}

/**
 * `execution.output` of a remote run, in the runtime's protocol: each event is relayed as it
 * came (under `remote`, so nothing a run server sends is read as the protocol itself); usage
 * totals in events or status answers, in either vocabulary, become `service.usage` reports of
 * what is new since the last (so usage is metered as it arrives, and a hard budget stop ends
 * the run there too); text deltas are kept for the result (run-text.ts); the explicit result of
 * an end becomes `service.result`. The row of `metered` is locked for the batch: the run's
 * events may be handled by any Keel process, one batch at a time.
 */
export async function onExecutionOutput(event: ExecutionOutputEvent, ctx: RemoteRunnerContext): Promise<void> {
  const { rows } = await ctx.db.query('select * from metered where run_id = $1 for update', [event.runId]);
  const row = rows[0];
  const metered: Totals = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costCents: 0 };
  for (const name of COUNTERS) metered[name] = Number(row?.[column(name)] ?? 0);
  let text = { text: String(row?.result_text ?? ''), truncated: row?.result_text_truncated === true };
  // A redelivered batch appends nothing twice: text is kept only from outputs after the last one kept.
  let textSeq = Number(row?.text_seq ?? 0);
  const outputs: ExecutionOutput[] = [];
  for (const output of event.outputs) {
    const name = eventNameOf(output);
    const data = output.data.data;
    outputs.push({ seq: output.seq, stream: 'sse', data: { event: name, remote: data } });
    const delta = textDeltaOf(name, data);
    if (output.seq > textSeq) {
      textSeq = output.seq;
      if (delta !== null) text = appendText(text, delta);
    }
    const totals = usageTotalsOf(name, data);
    if (totals) {
      const added = Object.fromEntries(COUNTERS.map((counter) => [counter, Math.max(0, totals[counter] - metered[counter])])) as Totals;
      if (COUNTERS.some((counter) => added[counter] > 0)) {
        for (const counter of COUNTERS) metered[counter] = Math.max(metered[counter], totals[counter]);
        const { inputTokens: _input, cachedInputTokens: _cached, outputTokens: _output, costCents: _cost, ...names } = totals;
        outputs.push({ seq: output.seq, stream: 'sse', data: { event: 'service.usage', data: { type: 'service.usage', ...added, ...names } } });
      }
    }
    const result = (TERMINAL_EVENTS.includes(name) || name === 'status') && isObject(data) && isTerminal(data.status) ? explicitResultOf(data) : undefined;
    if (result !== undefined) outputs.push({ seq: output.seq, stream: 'sse', data: { event: 'service.result', data: { type: 'service.result', result } } });
  }
  await ctx.db.query(
    `update metered set input_tokens = $2, cached_input_tokens = $3, output_tokens = $4, cost_cents = $5,
       result_text = $6, result_text_truncated = $7, text_seq = $8, updated_at = now() where run_id = $1`,
    [event.runId, metered.inputTokens, metered.cachedInputTokens, metered.outputTokens, metered.costCents, text.text, text.truncated, textSeq]);
  // When the executor recorded these outputs: usage recorded after the run's stop is not metered (the runtime's after-stop.ts).
  await ctx.services.call('runtime', 'adapter-report', {
    executionId: event.executionId, runId: event.runId, outputs, recordedAt: ctx.invocation.event?.occurredAt ?? null,
  }, reportKey(ctx, 'output'));
}

const isTerminal = (status: unknown) => typeof status === 'string' && ['succeeded', 'completed', 'failed', 'error', 'cancelled', 'canceled', 'stopped'].includes(status.toLowerCase());

/**
 * `execution.finished`: the run ends as its execution did; its usage was metered from the
 * outputs before it. Its result: the one the run server gave with the end (`result`, or the
 * reference servers' `output`), else, for a run that succeeded, the text it streamed, else the
 * end's status.
 */
export async function onExecutionFinished(event: ExecutionFinishedEvent, ctx: RemoteRunnerContext): Promise<void> {
  const response = isObject(event.response) ? event.response : null;
  const { rows } = await ctx.db.query('select result_text, result_text_truncated from metered where run_id = $1', [event.runId]);
  const streamed = rows[0] && String(rows[0].result_text) !== '' ? { text: String(rows[0].result_text), truncated: rows[0].result_text_truncated === true } : null;
  const explicit = response ? explicitResultOf(response) : undefined;
  const result = explicit !== undefined ? explicit
    : event.status === 'succeeded' && streamed ? streamedResult(streamed)
      : response ? { status: response.status ?? null } : null;
  await ctx.services.call('runtime', 'adapter-report', {
    executionId: event.executionId, runId: event.runId,
    finished: { status: event.status, httpStatus: event.httpStatus, errorCode: event.errorCode, logBytes: event.logBytes, response: result },
  }, reportKey(ctx, 'finished'));
  await ctx.db.query('delete from metered where run_id = $1', [event.runId]);
}

/** A redelivered event hands over the same report, which the runtime then runs once. */
function reportKey(ctx: RemoteRunnerContext, kind: string): { idempotencyKey: string } | undefined {
  const id = ctx.invocation.event?.id;
  return id ? { idempotencyKey: `${kind}-${id}` } : undefined;
}
