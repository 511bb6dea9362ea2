import { PluginError } from '@keel/sdk/plugin';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

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

const floorTo = (at: Date, unit: number) => new Date(Math.floor(at.getTime() / unit) * unit);
const ceilTo = (at: Date, unit: number) => new Date(Math.ceil(at.getTime() / unit) * unit);

/** The whole `unit`s inside a range (null when there are none), and the partial pieces left at its ends. */
function wholeUnits(range: TimeRange, unit: number): { whole: TimeRange | null; rest: TimeRange[] } {
  const wholeFrom = range.from ? ceilTo(range.from, unit) : null;
  const wholeTo = range.to ? floorTo(range.to, unit) : null;
  if (wholeFrom && wholeTo && wholeFrom.getTime() >= wholeTo.getTime()) return { whole: null, rest: [range] };
  const rest: TimeRange[] = [];
  if (range.from && wholeFrom && range.from.getTime() < wholeFrom.getTime()) rest.push({ from: range.from, to: wholeFrom });
  if (range.to && wholeTo && wholeTo.getTime() < range.to.getTime()) rest.push({ from: wholeTo, to: range.to });
  return { whole: { from: wholeFrom, to: wholeTo }, rest };
}

/**
 * Which parts of a range each source answers: whole days from daily rollups, whole hours left
 * at the two ends from hourly rollups, and the partial hours at the very ends from raw events.
 * A read therefore touches at most 2 × 23 hourly rows per attribution and two partial hours
 * of events, however long the range and however many events it holds.
 */
export function splitRange(range: TimeRange): { days: TimeRange | null; hours: TimeRange[]; raw: TimeRange[] } {
  const days = wholeUnits(range, DAY_MS);
  const hours: TimeRange[] = [];
  const raw: TimeRange[] = [];
  for (const piece of days.rest) {
    const split = wholeUnits(piece, HOUR_MS);
    if (split.whole) hours.push(split.whole);
    raw.push(...split.rest);
  }
  return { days: days.whole, hours, raw };
}
