/**
 * Month-to-date spend as the API shows it. The stored figure belongs to the calendar month
 * (UTC) in `spent_month`; once that month is over it reads as zero, so spend resets on the
 * first of the month without a job having to run at midnight.
 */
export function monthToDateCents(cents: unknown, spentMonth: unknown, now = new Date()): number {
  if (spentMonth === null || spentMonth === undefined) return 0;
  const [year, month] = monthOf(spentMonth);
  return year === now.getUTCFullYear() && month === now.getUTCMonth() ? Number(cents) : 0;
}

/** A `date` column arrives as text (YYYY-MM-DD) or, from the driver's default parser, as local midnight. */
function monthOf(value: unknown): [number, number] {
  if (value instanceof Date) return [value.getFullYear(), value.getMonth()];
  const [year, month] = String(value).split('-');
  return [Number(year), Number(month) - 1];
}
