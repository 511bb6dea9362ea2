import { splitRange, type TimeRange } from './periods.ts';

/** Measures every spend read sums, named as both sources provide them. */
export const MEASURES = 'cost_cents, input_tokens, cached_input_tokens, output_tokens, event_count';

/**
 * SQL for the spend rows of one company in a range, with the given attribution columns and
 * the measures: whole days from `cost_rollups_daily`, whole hours at the ends from
 * `cost_rollups`, partial hours from `cost_events`. The company id is `$1`; range bounds are
 * appended to `params`.
 */
export function spendSource(range: TimeRange, columns: readonly string[], params: unknown[]): string {
  const { days, hours, raw } = splitRange(range);
  const bound = (value: Date | null) => { params.push(value ? value.toISOString() : null); return `$${params.length}::timestamptz`; };
  const select = columns.length ? `${columns.join(', ')}, ` : '';
  const rollup = (table: string, column: string, piece: TimeRange) => {
    const from = bound(piece.from);
    const to = bound(piece.to);
    return `select ${select}${MEASURES} from ${table} where company_id = $1 and (${from} is null or ${column} >= ${from}) and (${to} is null or ${column} < ${to})`;
  };
  const parts: string[] = [];
  if (days) parts.push(rollup('cost_rollups_daily', 'day', days));
  for (const piece of hours) parts.push(rollup('cost_rollups', 'hour', piece));
  for (const edge of raw) {
    const from = bound(edge.from);
    const to = bound(edge.to);
    parts.push(`select ${select}cost_cents, coalesce(input_tokens, 0) as input_tokens, coalesce(cached_input_tokens, 0) as cached_input_tokens,
                       coalesce(output_tokens, 0) as output_tokens, 1 as event_count
                  from cost_events where company_id = $1 and (${from} is null or occurred_at >= ${from}) and (${to} is null or occurred_at < ${to})`);
  }
  return parts.join(' union all ');
}

/** Sums of the measures, as the API names them. */
export function measures(row: Record<string, unknown>): { spendCents: number; inputTokens: number; cachedInputTokens: number; outputTokens: number; eventCount: number } {
  return {
    spendCents: Number(row.cost_cents ?? 0),
    inputTokens: Number(row.input_tokens ?? 0),
    cachedInputTokens: Number(row.cached_input_tokens ?? 0),
    outputTokens: Number(row.output_tokens ?? 0),
    eventCount: Number(row.event_count ?? 0),
  };
}

export const SUMMED = 'sum(cost_cents)::bigint as cost_cents, sum(input_tokens)::bigint as input_tokens, sum(cached_input_tokens)::bigint as cached_input_tokens, sum(output_tokens)::bigint as output_tokens, sum(event_count)::bigint as event_count';
