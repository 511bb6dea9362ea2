-- Month-to-date spend is the costs plugin's fact: its running totals (plugin_costs.spend_totals)
-- already hold it, and its view plugin_costs.month_spend (the plugin's migration 0005) shows the
-- current calendar month (UTC) of each company and agent. The copy on the kernel's rows, kept in
-- step by keel_bridge.report_monthly_spend with every batch of cost events (and announced to
-- every process's cache, migration 0041), goes: the kernel reads the plugin's view instead.
-- Nothing is lost: every figure the columns held is in the plugin's totals.

-- A scope's month-to-date spend in cents: 0 when the costs plugin was never installed (no view).
-- A disabled plugin keeps its tables, so its figures still read as they were when it stopped.
-- The view runs with the kernel's privileges, so it is read only when the plugin holding the
-- namespace is the first-party costs plugin, whose migrations are the project's own code: a
-- plugin of another origin that took the namespace `costs` could otherwise have the kernel run
-- SQL of its choosing (or show figures of its choosing).
create function keel_private.month_spend(of_company uuid, of_scope text, of_id uuid)
  returns bigint language plpgsql stable set search_path = pg_catalog, pg_temp as $$
begin
  if to_regclass('plugin_costs.month_spend') is null
     or not exists (select 1 from public.plugins p where p.key = 'costs' and p.source_kind = 'first_party' and p.db_namespace = 'costs') then
    return 0;
  end if;
  return coalesce((select m.cost_cents from plugin_costs.month_spend m
                    where m.company_id = of_company and m.scope_type = of_scope and m.scope_id = of_id), 0);
end $$;
revoke all on function keel_private.month_spend(uuid, text, uuid) from public;

drop function keel_bridge.report_monthly_spend(text, text, date, bigint, jsonb);

-- A company row changes only by kernel routes and bridge functions now: any change evicts it
-- from every process's cache again (migration 0006), there is no spend to patch in place.
drop trigger companies_invalidate on companies;
drop function keel_notify_company_change();
create trigger companies_invalidate after update or delete on companies
  for each row execute function keel_notify_invalidation('company');

alter table companies drop column spent_monthly_cents, drop column spent_month;
alter table agents drop column spent_monthly_cents, drop column spent_month;
