import { PluginError } from '@keel/sdk/plugin';

const HOUR_MS = 3_600_000;

/** A half-open time range [from, to); null ends are unbounded. */
export interface TimeRange { from: Date | null; to: Date | null }

/** The calendar month (UTC) of a moment, as the period key of running totals: `YYYY-MM`. */
export function monthKey(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
}

export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

export function nextMonthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
}

/**
 * `from` and `to` of a query, both optional and both inclusive as the API states them; `to`
 * becomes exclusive one millisecond later (timestamps are stored to the millisecond or finer,
 * and reads of rollups need a half-open range).
 */
export function rangeOf(query: Record<string, unknown>): TimeRange {
  const from = typeof query.from === 'string' ? new Date(query.from) : null;
  const to = typeof query.to === 'string' ? new Date(new Date(query.to).getTime() + 1) : null;
  if (from && to && from.getTime() >= to.getTime()) throw new PluginError(400, 'invalid_range', 'from must not be after to');
  return { from, to };
}

/** The last `hours` hours up to now. */
export function trailing(hours: number, now: Date): TimeRange {
  return { from: new Date(now.getTime() - hours * HOUR_MS), to: new Date(now.getTime() + 1) };
}

const floorHour = (at: Date) => new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS);
const ceilHour = (at: Date) => new Date(Math.ceil(at.getTime() / HOUR_MS) * HOUR_MS);

/**
 * Which part of a range hourly rollups answer (the whole hours inside it) and which parts raw
 * events must answer (the partial hours at either end). A read therefore scans at most two
 * hours of raw events, however many events the range holds.
 */
export function splitRange(range: TimeRange): { rollups: TimeRange | null; raw: TimeRange[] } {
  const wholeFrom = range.from ? ceilHour(range.from) : null;
  const wholeTo = range.to ? floorHour(range.to) : null;
  if (wholeFrom && wholeTo && wholeFrom.getTime() >= wholeTo.getTime()) return { rollups: null, raw: [range] };
  const raw: TimeRange[] = [];
  if (range.from && wholeFrom && range.from.getTime() < wholeFrom.getTime()) raw.push({ from: range.from, to: wholeFrom });
  if (range.to && wholeTo && wholeTo.getTime() < range.to.getTime()) raw.push({ from: wholeTo, to: range.to });
  return { rollups: { from: wholeFrom, to: wholeTo }, raw };
}
