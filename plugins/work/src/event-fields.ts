import { workEvents, type PayloadOf } from '@keel/sdk/plugin';

/**
 * Row values (the database answers them untyped) as the work events' declarations type them
 * (sdk/events/work-events.ts): converted and checked here, never cast, so a publish that does
 * not match its declaration fails to compile.
 */
export type IssueStatus = PayloadOf<typeof workEvents.issueCreated>['status'];

const STATUSES = workEvents.issueCreated.schema.properties.status.enum;

export const text = (value: unknown): string => String(value);

export const textOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

/** An issue's status, one of the declared statuses (the table's check constraint allows no other). */
export function issueStatus(value: unknown): IssueStatus {
  const status = STATUSES.find((known) => known === value);
  if (status === undefined) throw new Error(`unknown issue status ${String(value)}`);
  return status;
}
