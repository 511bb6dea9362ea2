import type { PluginDatabase } from './database.ts';
import type { DeferredStatement, Invocation } from '../invocation.ts';
import { CapabilityError, type WorkerCapability } from './types.ts';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable } from '../../../db/connection-errors.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;
const MAX_CENTS = Number.MAX_SAFE_INTEGER;

/**
 * Writes to kernel rows (budgets, month-to-date spend, pauses) from inside the invocation's own
 * transaction, through SECURITY DEFINER functions of `keel_bridge` that accept only the
 * invocation identity the kernel signed and act only on its company. Because they share the
 * plugin's transaction, a hard stop commits or rolls back together with the spend that caused
 * it. The database itself enforces the grant: the functions are executable by the plugin's
 * role only when the operator granted the capability (see plugin-databases.ts).
 */
async function bridge(db: PluginDatabase | null, invocation: Invocation, sql: string, values: unknown[], own: 'call' | 'autonomous' | 'with_commit' = 'call'): Promise<unknown> {
  if (!db) throw new CapabilityError(403, 'kernel_rows_unavailable', 'this capability needs the plugin database connection');
  if (invocation.message.readOnly || !invocation.message.transactional) throw new CapabilityError(403, 'kernel_rows_read_only', 'kernel rows can be changed only from a mutating, transactional call');
  const signed = invocation.message.signed;
  if (!signed || !invocation.message.info.companyId) throw new CapabilityError(403, 'kernel_rows_unavailable', 'this call serves no company; kernel rows cannot be changed');
  const query = { text: sql, values: [signed.invocation, signed.signature, ...values] };
  // A write that answers nothing, made by a call of a batch, goes with the batch's COMMIT
  // (batches.ts): no round trip of its own, and the rows it changes are locked for the commit
  // alone. Should the database refuse it there, the batch's calls run again one by one, and
  // each of them fails its commit.
  if (own === 'with_commit' && invocation.batch) {
    invocation.pendingKernelRows.push(query);
    return null;
  }
  try {
    let result;
    if (own === 'autonomous') {
      result = await db.autonomous(query.text, query.values);
    } else {
      const client = await db.transactionOf(invocation)!;
      result = await db.statement(client, () => client.query(query));
    }
    return (result.rows[0] as { result?: unknown } | undefined)?.result ?? null;
  } catch (error) {
    if (error instanceof CapabilityError) throw error;
    if (isDatabaseUnavailable(error)) throw new CapabilityError(DATABASE_UNAVAILABLE.status, DATABASE_UNAVAILABLE.code, DATABASE_UNAVAILABLE.message);
    const pgError = error as { code?: string; message?: string };
    if (pgError.code === '42501') throw new CapabilityError(403, 'capability_denied', `the database refused: ${pgError.message}`);
    throw new CapabilityError(400, 'invalid_arguments', pgError.message ?? 'refused');
  }
}

function cents(value: unknown, name: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > MAX_CENTS) throw new CapabilityError(400, 'invalid_arguments', `${name} must be a non-negative integer number of cents`);
  return value as number;
}

function uuid(value: unknown, name: string): string {
  if (typeof value !== 'string' || !UUID.test(value)) throw new CapabilityError(400, 'invalid_arguments', `${name} must be a uuid`);
  return value.toLowerCase();
}

function reason(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200) throw new CapabilityError(400, 'invalid_arguments', 'reason must be 1-200 characters');
  return value;
}

/** Sends a batch's deferred kernel-row writes (Invocation.pendingKernelRows), pipelined, in the order made. */
export async function flushKernelRows(client: import('pg').PoolClient, statements: DeferredStatement[]): Promise<void> {
  await Promise.all(statements.map((statement) => client.query(statement)));
}

/**
 * `ctx.budgets` (budgets.write): monthly budgets and month-to-date spend of the company and its
 * agents. A batch's month-to-date report is sent with its COMMIT (bridge, 'with_commit').
 */
function budgetsCapability(db: PluginDatabase | null): WorkerCapability {
  return {
    reportMonthlySpend: async (invocation, args) => {
      const report = args[0] as { month?: unknown; companyCents?: unknown; agents?: unknown } | undefined;
      if (!report || typeof report !== 'object') throw new CapabilityError(400, 'invalid_arguments', 'reportMonthlySpend needs {month, companyCents?, agents?}');
      const month = typeof report.month === 'string' ? MONTH.exec(report.month) : null;
      if (!month) throw new CapabilityError(400, 'invalid_arguments', 'month must be YYYY-MM');
      const agents = report.agents === undefined ? [] : report.agents;
      if (!Array.isArray(agents) || agents.length > 10_000) throw new CapabilityError(400, 'invalid_arguments', 'agents must be an array of at most 10,000 {agentId, cents}');
      const rows = agents.map((entry: { agentId?: unknown; cents?: unknown }) => ({ id: uuid(entry?.agentId, 'agentId'), cents: cents(entry?.cents, 'cents') }));
      const companyCents = report.companyCents === undefined || report.companyCents === null ? null : cents(report.companyCents, 'companyCents');
      await bridge(db, invocation, 'select keel_bridge.report_monthly_spend($1, $2, $3::date, $4, $5::jsonb) as result', [`${month[1]}-${month[2]}-01`, companyCents, JSON.stringify(rows)], 'with_commit');
      return null;
    },
    setMonthlyBudget: async (invocation, args) => {
      const change = args[0] as { scope?: unknown; agentId?: unknown; cents?: unknown } | undefined;
      if (!change || (change.scope !== 'company' && change.scope !== 'agent')) throw new CapabilityError(400, 'invalid_arguments', "setMonthlyBudget needs {scope: 'company' | 'agent', agentId?, cents}");
      const target = change.scope === 'agent' ? uuid(change.agentId, 'agentId') : null;
      const found = await bridge(db, invocation, 'select keel_bridge.set_monthly_budget($1, $2, $3, $4::uuid, $5) as result', [change.scope, target, cents(change.cents, 'cents')]);
      return { updated: found === true };
    },
  };
}

/**
 * Pauses as holds (migration 0020): `ctx.agents.pause/resume` (agents.pause) and
 * `ctx.companies.pause/resume` (companies.pause) place or lift this plugin's hold in this
 * call's transaction. keel_bridge writes the hold, the status, the activity entry and the
 * status event together, so they commit or roll back with the plugin's own writes.
 *
 * `ctx.companies.nextIssueNumber` (issues.number) takes the company's next issue number in a
 * transaction of its own, committed at once (PluginDatabase.autonomous): the company's row is
 * locked for that one update, not until the creating call commits, so creates of one company
 * (in any process) no longer wait for each other's commits, and no write of the company row
 * (month-to-date spend, a pause) waits for a create. Numbers stay unique and in the order they
 * were taken; a create that fails after taking its number leaves that number unused.
 * `nextIssueNumbers(count)` takes a range in the call's own transaction, as before: an import
 * that fails gives its whole range back.
 */
export function kernelRowCapabilities(db: PluginDatabase | null): { budgets: WorkerCapability; agents: WorkerCapability; companies: WorkerCapability } {
  const answer = (result: unknown, what: string) => {
    const { found, changed } = result as { found: boolean; changed: boolean };
    // An unknown id and another company's agent alike; nothing was raised, so the call's transaction goes on.
    if (!found) throw new CapabilityError(404, 'not_found', `${what} not found`);
    return { changed };
  };
  const agent = (held: boolean) => async (invocation: Invocation, args: unknown[]) =>
    answer(await bridge(db, invocation, 'select keel_bridge.hold_agent($1, $2, $3::uuid, $4, $5) as result', [uuid(args[0], 'agentId'), held, reason(args[1])]), 'Agent');
  const company = (held: boolean) => async (invocation: Invocation, args: unknown[]) =>
    answer(await bridge(db, invocation, 'select keel_bridge.hold_company($1, $2, $3, $4) as result', [held, reason(args[0])]), 'Company');
  return {
    budgets: budgetsCapability(db),
    agents: { pause: agent(true), resume: agent(false) },
    companies: {
      pause: company(true),
      resume: company(false),
      nextIssueNumber: (invocation) => bridge(db, invocation, 'select keel_bridge.next_issue_number($1, $2) as result', [], 'autonomous'),
      nextIssueNumbers: (invocation, args) => bridge(db, invocation, 'select keel_bridge.next_issue_numbers($1, $2, $3::integer) as result', [args[0]]),
    },
  };
}
