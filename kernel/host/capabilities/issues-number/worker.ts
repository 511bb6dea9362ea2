import { issuesNumber as spec } from '../../../../sdk/capabilities/kernel-data.ts';
import type { PluginDatabase } from '../../worker/capabilities/database.ts';
import { bridge } from '../../worker/capabilities/kernel-row-bridge.ts';
import type { WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.companies.nextIssueNumber` (issues.number) takes the company's next issue number in a
 * transaction of its own, committed at once (PluginDatabase.autonomous): the company's row is
 * locked for that one update, not until the creating call commits, so creates of one company
 * (in any process) no longer wait for each other's commits, and no write of the company row
 * (month-to-date spend, a pause) waits for a create. Numbers stay unique and in the order they
 * were taken; a create that fails after taking its number leaves that number unused.
 * `nextIssueNumbers(count)` takes a range in the call's own transaction, as before: an import
 * that fails gives its whole range back.
 */
function issueNumbers(db: PluginDatabase | null): WorkerCapability {
  return {
    nextIssueNumber: (invocation) => bridge(db, invocation, 'select keel_bridge.next_issue_number($1, $2) as result', [], 'autonomous'),
    nextIssueNumbers: (invocation, args) => bridge(db, invocation, 'select keel_bridge.next_issue_numbers($1, $2, $3::integer) as result', [args[0]]),
  };
}

export const workerSide = workerUnit(spec, ({ database }) => ({ companies: issueNumbers(database) }));
