/**
 * Month-to-date spend (spentMonthlyCents) is the costs plugin's fact: its running totals of the
 * current calendar month (UTC), shown by the plugin's view month_spend. The kernel keeps no copy;
 * it reads the view through keel_private.month_spend (migration 0045), which answers 0 when the
 * plugin was never installed and the plugin's last figures while it is disabled.
 *
 * These select lists read a row with its spend, in the statement that reads the row, so that
 * toCompany and toAgentJson show it without a round trip of their own. They name the table's
 * columns unqualified: use them on `companies` and `agents` without an alias (or in RETURNING).
 * The company guard's cached row shows the spend it was read with for CACHED_SPEND_MS
 * (db/company-cache.ts, withCurrentSpend), and is read again after each transaction of the costs
 * plugin this process carried.
 */
export const COMPANY_WITH_SPEND = `*, keel_private.month_spend(id, 'company', id) as spent_monthly_cents`;
export const AGENT_WITH_SPEND = `*, keel_private.month_spend(company_id, 'agent', id) as spent_monthly_cents`;
