-- The keel_bridge function(s) of capability budgets.write, the one current definition. Installed by the
-- migration runner under its lock (kernel/db/bridge-functions.ts) whenever this text changes;
-- every function stays SECURITY DEFINER with its search_path pinned and no EXECUTE for PUBLIC
-- (the installer refuses anything else). A plugin's runtime role may execute it only with the
-- capability granted (bridgeFunctions of kernel.ts, granted by plugin-databases.ts).

-- budgets.write: the monthly budget of the invocation's company (scope 'company') or of one of
-- its agents (scope 'agent'). Returns whether a row was found.
create or replace function keel_bridge.set_monthly_budget(invocation text, signature text, scope text, scope_id uuid, cents bigint)
  returns boolean language plpgsql security definer set search_path = public, pg_temp as $$
declare
  company uuid := keel_private.company_of(keel_private.verified_invocation(invocation, signature));
begin
  if cents is null or cents < 0 then
    raise exception 'budget must be a non-negative number of cents' using errcode = 'invalid_parameter_value';
  end if;
  if scope = 'company' then
    update companies set budget_monthly_cents = cents, updated_at = now() where id = company and id = coalesce(scope_id, company);
  elsif scope = 'agent' then
    update agents set budget_monthly_cents = cents, updated_at = now() where id = scope_id and company_id = company;
  else
    raise exception 'unknown budget scope %', scope using errcode = 'invalid_parameter_value';
  end if;
  return found;
end $$;
revoke all on function keel_bridge.set_monthly_budget(text, text, text, uuid, bigint) from public;
