-- Month-to-date spend of every company and agent: the running totals of the current calendar
-- month (UTC), which the kernel shows as spentMonthlyCents (its keel_private.month_spend reads
-- this view). A month that has ended simply is not the current one: spend reads as zero from
-- the first of the month, with no job to run. The kernel keeps no copy.
create view month_spend as
  select company_id, scope_type, scope_id, cost_cents
    from spend_totals
   where scope_type in ('company', 'agent') and period = to_char(now() at time zone 'UTC', 'YYYY-MM');
