import type { Queryable } from '../db/database.ts';

/**
 * Month-to-date spend (spentMonthlyCents) is the costs plugin's fact: its running totals of the
 * current calendar month (UTC), shown by the plugin's view month_spend. The kernel keeps no copy;
 * it reads the view through keel_private.month_spend (migration 0045), which answers 0 when the
 * plugin was never installed and the plugin's last figures while it is disabled.
 *
 * These select lists read a row with its spend, in the statement that reads the row, so that
 * toCompany and toAgentJson show it without a round trip of their own. They name the table's
 * columns unqualified: use them on `companies` and `agents` without an alias (or in RETURNING).
 */
export const COMPANY_WITH_SPEND = `*, keel_private.month_spend(id, 'company', id) as spent_monthly_cents`;
export const AGENT_WITH_SPEND = `*, keel_private.month_spend(company_id, 'agent', id) as spent_monthly_cents`;

/**
 * A company's spend for a row read without it: the company guard's cached row, which cannot
 * know when the plugin's totals change, so it never carries the figure.
 */
export async function companyMonthSpend(db: Queryable, companyId: string): Promise<number> {
  const row = await db.maybeOne<{ cents: string }>("select keel_private.month_spend(?, 'company', ?) as cents", [companyId, companyId]);
  return Number(row?.cents ?? 0);
}
