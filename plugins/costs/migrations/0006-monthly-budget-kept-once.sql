-- The monthly budget of a company or an agent is the kernel's budget_monthly_cents: the
-- kernel accepts, stores and answers it with this plugin absent or disabled. Their
-- calendar-month billed-cents policies keep no amount of their own any more (it was a copy kept
-- in step by event subscribers and write-backs): the plugin reads the kernel's figure through
-- keel_bridge.monthly_budget (capability budgets.write) wherever it needs it, in the same
-- statement as the spend it is compared with. Every other policy (projects, lifetime windows)
-- keeps its amount here, its only place. The check keeps the budget in one place.
alter table budget_policies alter column amount drop not null;
update budget_policies set amount = null
 where scope_type in ('company', 'agent') and metric = 'billed_cents' and window_kind = 'calendar_month_utc';
alter table budget_policies add constraint budget_policies_amount_of_kernel_budget
  check ((amount is null) = (scope_type in ('company', 'agent') and metric = 'billed_cents' and window_kind = 'calendar_month_utc'));
