/**
 * The pieces of the real host the test host reuses rather than imitates: the isolate and its
 * bridge (so plugin code runs exactly as it does in a worker), the SQL statement guard and
 * the activity entry rules and sanitiser.
 */
export { Sandbox, type HostFunctions } from '../shared/sandbox.ts';
export { refusedStatement, leadingKeyword } from '../shared/sql-guard.ts';
export { sanitizeDetails } from '../shared/sanitize.ts';
export { checkedActivityEntry } from '../shared/activity-entry.ts';
