/**
 * Usage as a run server reports it, in either vocabulary Keel reads (docs/api/runtime.md,
 * "Usage"): Keel's own camelCase (`inputTokens` uncached, `cachedInputTokens`, `outputTokens`,
 * `costUsd` | `costCents`, `billingType`) or the reference run servers' snake_case
 * (`input_tokens`, `output_tokens`, `cached_input_tokens` | `cache_read_input_tokens`,
 * `total_tokens`, `cost_usd` | `cost_cents`, `billing_type`). Both are running totals of the
 * run; reports.ts meters the difference to what it metered before, whichever vocabulary
 * carried it, so a run that mixes them is not counted twice.
 */

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

export const COUNTERS = ['inputTokens', 'cachedInputTokens', 'outputTokens', 'costCents'] as const;
export type Totals = Record<(typeof COUNTERS)[number], number>;
export interface UsageTotals extends Totals { provider?: string; model?: string; billingType?: string }

/** The largest totals a report may carry (as the runtime accepts them); a report beyond them is malformed. */
const MAX_TOKENS = 1_000_000_000_000;
const MAX_CENTS = 100_000_000_000;
/** The longest provider, model or billing type the runtime accepts: a longer one would lose the report there. */
const MAX_NAME = 200;
/** Keel's counter names: a usage object that has any of them is read in Keel's vocabulary only. */
const KEEL_NAMES = ['inputTokens', 'cachedInputTokens', 'outputTokens', 'costUsd', 'costCents'];

/** Thrown by the readers below; caught in usageTotalsOf, never past it. */
class Malformed extends Error {}

/** A count: absent is 0; anything but a finite non-negative number within `max` makes the report malformed. */
function count(value: unknown, max: number): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= max) return Math.floor(value);
  throw new Malformed();
}

/** A cost in cents from cents (preferred) or dollars; absent is 0. */
function cents(centsValue: unknown, usdValue: unknown): number {
  if (centsValue !== undefined && centsValue !== null) return count(centsValue, MAX_CENTS);
  if (usdValue === undefined || usdValue === null) return 0;
  if (typeof usdValue === 'number' && Number.isFinite(usdValue) && usdValue >= 0 && usdValue * 100 <= MAX_CENTS) return Math.round(usdValue * 100);
  throw new Malformed();
}

/** A name passed on to the runtime: a string within bounds, or left out when it is not a string. */
function name(...values: unknown[]): string | undefined {
  const value = values.find((candidate) => candidate !== undefined && candidate !== null);
  if (typeof value !== 'string') return undefined;
  if (value.length === 0 || value.length > MAX_NAME) throw new Malformed();
  return value;
}

function keelTotals(usage: Record<string, unknown>): Totals {
  return {
    inputTokens: count(usage.inputTokens, MAX_TOKENS), cachedInputTokens: count(usage.cachedInputTokens, MAX_TOKENS),
    outputTokens: count(usage.outputTokens, MAX_TOKENS), costCents: cents(usage.costCents, usage.costUsd),
  };
}

/**
 * The reference vocabulary, split so that `inputTokens` is the uncached input as Keel keeps it:
 * `cached_input_tokens` is part of `input_tokens` (the convention of the OpenAI-style servers
 * that name it so), so the uncached input is the difference, and a cached part larger than the
 * input is malformed; `cache_read_input_tokens` is beside `input_tokens` (the Anthropic-style
 * convention), so `input_tokens` is already the uncached input. `total_tokens` is
 * informational: not read.
 */
function referenceTotals(usage: Record<string, unknown>): Totals {
  const input = count(usage.input_tokens, MAX_TOKENS);
  let uncached = input;
  let cached = 0;
  if (usage.cached_input_tokens !== undefined && usage.cached_input_tokens !== null) {
    cached = count(usage.cached_input_tokens, MAX_TOKENS);
    if (cached > input) throw new Malformed();
    uncached = input - cached;
  } else {
    cached = count(usage.cache_read_input_tokens, MAX_TOKENS);
  }
  return { inputTokens: uncached, cachedInputTokens: cached, outputTokens: count(usage.output_tokens, MAX_TOKENS), costCents: cents(usage.cost_cents, usage.cost_usd) };
}

/**
 * The run's usage so far as an event reports it (running totals), or null when the event
 * carries none or a malformed one: such an event is relayed to the log as it came and metered
 * as nothing. The usage is the event's `usage` object (any event, a status answer among them),
 * or a `run.usage` event's data itself. Nothing a run server sends can make this throw, so a
 * malformed event never holds back the run's later events (its end among them).
 */
export function usageTotalsOf(event: string, data: unknown): UsageTotals | null {
  if (!isObject(data)) return null;
  const usage = isObject(data.usage) ? data.usage : event === 'run.usage' ? data : null;
  if (!usage) return null;
  try {
    const totals = KEEL_NAMES.some((key) => Object.hasOwn(usage, key)) ? keelTotals(usage) : referenceTotals(usage);
    const provider = name(usage.provider);
    const model = name(usage.model);
    const billingType = name(usage.billingType, usage.billing_type);
    return { ...totals, ...(provider ? { provider } : {}), ...(model ? { model } : {}), ...(billingType ? { billingType } : {}) };
  } catch {
    return null;
  }
}
