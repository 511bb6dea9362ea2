import type { ExecutionFinishedEvent, ExecutionOutput, ExecutionOutputEvent } from '@keel/sdk/plugin';
import type { RemoteRunnerContext } from './context.ts';
import { TERMINAL_EVENTS } from './start.ts';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const COUNTERS = ['inputTokens', 'cachedInputTokens', 'outputTokens', 'costCents'] as const;
type Totals = Record<(typeof COUNTERS)[number], number>;

/** The largest totals a report may carry (as the runtime accepts them); a report beyond them is malformed. */
const MAX_TOKENS = 1_000_000_000_000;
const MAX_CENTS = 100_000_000_000;

/**
 * The run's usage so far as a run server reports it (running totals), or null when the event
 * carries none or a malformed one (a count that is not a non-negative number within bounds, a
 * cost that is not one): such an event is relayed to the log as it came and metered as nothing.
 * Nothing a run server sends can make this throw, so a malformed event never holds back the
 * run's later events (its end among them).
 */
function totalsOf(event: string, data: unknown): (Totals & { provider: unknown; model: unknown; billingType: unknown }) | null {
  if (!isObject(data)) return null;
  const usage = event === 'run.usage' ? data : isObject(data.usage) ? data.usage : null;
  if (!usage) return null;
  const count = (value: unknown, max: number): number | null => {
    if (value === undefined || value === null) return 0;
    return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= max ? Math.floor(value) : null;
  };
  const costCents = usage.costCents !== undefined ? count(usage.costCents, MAX_CENTS)
    : usage.costUsd === undefined || usage.costUsd === null ? 0
      : typeof usage.costUsd === 'number' && Number.isFinite(usage.costUsd) && usage.costUsd >= 0 && usage.costUsd * 100 <= MAX_CENTS ? Math.round(usage.costUsd * 100) : null;
  const totals = {
    inputTokens: count(usage.inputTokens, MAX_TOKENS), cachedInputTokens: count(usage.cachedInputTokens, MAX_TOKENS), outputTokens: count(usage.outputTokens, MAX_TOKENS), costCents,
  };
  if (Object.values(totals).some((value) => value === null)) return null;
  return { ...(totals as Totals), provider: usage.provider, model: usage.model, billingType: usage.billingType };
}

/**
 * `execution.output` of a remote run, in the runtime's protocol: each event is relayed as it
 * came (under `remote`, so nothing a run server sends is read as the protocol itself); usage
 * totals in events or status answers become `service.usage` reports of what is new since the
 * last (so usage is metered as it arrives, and a hard budget stop ends the run there too); the
 * result of the end becomes `service.result`.
 */
export async function onExecutionOutput(payload: Record<string, unknown>, ctx: RemoteRunnerContext): Promise<void> {
  const event = payload as unknown as ExecutionOutputEvent;
  const { rows } = await ctx.db.query('select * from metered where run_id = $1 for update', [event.runId]);
  const metered: Totals = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costCents: 0 };
  for (const name of COUNTERS) metered[name] = Number(rows[0]?.[name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] ?? 0);
  const outputs: ExecutionOutput[] = [];
  for (const output of event.outputs) {
    const name = typeof output.data.event === 'string' ? output.data.event : 'message';
    const data = output.data.data;
    outputs.push({ seq: output.seq, stream: 'sse', data: { event: name, remote: data } });
    const totals = totalsOf(name, data);
    if (totals) {
      const added = Object.fromEntries(COUNTERS.map((counter) => [counter, Math.max(0, totals[counter] - metered[counter])])) as Totals;
      if (COUNTERS.some((counter) => added[counter] > 0)) {
        for (const counter of COUNTERS) metered[counter] = Math.max(metered[counter], totals[counter]);
        outputs.push({
          seq: output.seq, stream: 'sse',
          data: {
            event: 'service.usage',
            data: {
              type: 'service.usage', ...added,
              ...(typeof totals.provider === 'string' ? { provider: totals.provider } : {}), ...(typeof totals.model === 'string' ? { model: totals.model } : {}),
              ...(typeof totals.billingType === 'string' ? { billingType: totals.billingType } : {}),
            },
          },
        });
      }
    }
    if ((TERMINAL_EVENTS.includes(name) || name === 'status') && isObject(data) && data.result !== undefined && isTerminal(data.status)) {
      outputs.push({ seq: output.seq, stream: 'sse', data: { event: 'service.result', data: { type: 'service.result', result: data.result } } });
    }
  }
  await ctx.db.query(
    `update metered set input_tokens = $2, cached_input_tokens = $3, output_tokens = $4, cost_cents = $5, updated_at = now() where run_id = $1`,
    [event.runId, metered.inputTokens, metered.cachedInputTokens, metered.outputTokens, metered.costCents]);
  // When the executor recorded these outputs: usage recorded after the run's stop is not metered (the runtime's after-stop.ts).
  await ctx.services.call('runtime', 'adapter-report', {
    executionId: event.executionId, runId: event.runId, outputs, recordedAt: ctx.invocation.event?.occurredAt ?? null,
  }, reportKey(ctx, 'output'));
}

const isTerminal = (status: unknown) => typeof status === 'string' && ['succeeded', 'completed', 'failed', 'error', 'cancelled', 'canceled', 'stopped'].includes(status.toLowerCase());

/** `execution.finished`: the run ends as its execution did; its usage was metered from the outputs before it. */
export async function onExecutionFinished(payload: Record<string, unknown>, ctx: RemoteRunnerContext): Promise<void> {
  const event = payload as unknown as ExecutionFinishedEvent;
  const response = isObject(event.response) ? event.response : null;
  const result = response ? (response.result !== undefined ? response.result : { status: response.status ?? null }) : null;
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
