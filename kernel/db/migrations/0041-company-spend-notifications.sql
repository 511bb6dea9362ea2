-- Month-to-date spend changes a company row with every batch of cost events. Announced as an
-- invalidation, it evicted the row from every process's cache, and the next request of the
-- company read it from the database again: under steady ingest, nearly every request did. An
-- update that changes nothing but the spend columns now announces their new values instead
-- (type `company_spend`), and each process patches its cached row in place; any other change
-- still evicts it. Notifications are delivered in commit order, so the last patch applied is
-- the latest committed spend.
create function keel_notify_company_change() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE'
     and (to_jsonb(old) - 'spent_monthly_cents' - 'spent_month') = (to_jsonb(new) - 'spent_monthly_cents' - 'spent_month') then
    perform pg_notify('keel_auth', json_build_object('type', 'company_spend', 'id', new.id::text,
      'spentMonthlyCents', new.spent_monthly_cents::text, 'spentMonth', new.spent_month::text)::text);
  else
    perform pg_notify('keel_auth', json_build_object('type', 'company', 'id', case when tg_op = 'DELETE' then old.id else new.id end::text)::text);
  end if;
  return null;
end $$;

drop trigger companies_invalidate on companies;
create trigger companies_invalidate after update or delete on companies
  for each row execute function keel_notify_company_change();
