import type { Row } from './context.ts';

/**
 * Usage reported after a run was stopped (cancelled by a request, a pause or a hard budget
 * stop; or ended otherwise while its process still writes: a grace period after SIGTERM, a
 * run server still streaming). The stop decision is the moment the run left `running`
 * (runs.finished_at). Usage **in flight** at that moment, the output the executor had already
 * recorded (its batch committed to the run's log, with its `execution.output` event) before the
 * decision but that is handled after it, is metered, marked: its cost event's `billingCode` is
 * `in_flight_at_stop` and its `occurredAt` the moment it was recorded. Usage recorded after the
 * decision is not metered: the run's usageJson counts it (`unmeteredAfterStop`), the log keeps it.
 */
export const IN_FLIGHT_BILLING_CODE = 'in_flight_at_stop';

export type Metering = { kind: 'running' } | { kind: 'in_flight'; recordedAt: string } | { kind: 'after_stop' };

/** How the usage of output recorded at `recordedAt` (the output event's time; unknown counts as now) is metered for this run. */
export function meteringOf(run: Row, recordedAt: string | null | undefined): Metering {
  if (run.status === 'running' || run.status === 'queued') return { kind: 'running' };
  const stoppedAt = run.finished_at ? new Date(String(run.finished_at instanceof Date ? run.finished_at.toISOString() : run.finished_at)).getTime() : Number.NaN;
  const recorded = recordedAt ? new Date(recordedAt).getTime() : Number.NaN;
  if (Number.isFinite(stoppedAt) && Number.isFinite(recorded) && recorded <= stoppedAt) return { kind: 'in_flight', recordedAt: new Date(recorded).toISOString() };
  return { kind: 'after_stop' };
}
