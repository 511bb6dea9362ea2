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

-- budgets.write: the monthly budgets of companies (scope 'company', scope_id the company) or of
-- their agents (scope 'agent'), 0 for a row that does not exist, one row per scope asked. The kernel's
-- budget_monthly_cents is the one stored budget of those scopes; the costs plugin's monthly
-- policies for them keep no amount of their own and read it here, inside the statement that
-- adds spend and opens incidents (one snapshot: a hard stop stays exact under concurrency).
-- It answers that one figure and nothing else of the row. It takes no signed invocation: one
-- group commit of cost events serves several companies in one statement, which holds none;
-- the figure is the one company.* and agent.* events carry to any subscriber anyway.
create or replace function keel_bridge.monthly_budgets(scopes jsonb)
  returns table (company_id uuid, scope_type text, scope_id uuid, amount bigint)
  language sql stable security definer set search_path = public, pg_temp as $$
  select s.company_id, s.scope_type, s.scope_id, coalesce(case s.scope_type
    when 'company' then (select c.budget_monthly_cents from companies c where c.id = s.company_id and c.id = s.scope_id)
    when 'agent' then (select a.budget_monthly_cents from agents a where a.id = s.scope_id and a.company_id = s.company_id)
  end, 0)::bigint
    from jsonb_to_recordset(coalesce(scopes, '[]'::jsonb)) as s(company_id uuid, scope_type text, scope_id uuid)
$$;
revoke all on function keel_bridge.monthly_budgets(jsonb) from public;

-- One scope's figure, for reads of a few policies. A statement over many policies (the
-- incidents a batch of cost events calls for) reads them all in one call of monthly_budgets:
-- a SECURITY DEFINER function call per row (its own search_path and user switch) was a
-- sixth of cost ingest's time.
create or replace function keel_bridge.monthly_budget(of_company uuid, scope text, scope_id uuid)
  returns bigint language sql stable security definer set search_path = public, pg_temp as $$
  select coalesce((select b.amount from keel_bridge.monthly_budgets(jsonb_build_array(jsonb_build_object(
    'company_id', of_company, 'scope_type', scope, 'scope_id', scope_id))) b), 0)::bigint
$$;
revoke all on function keel_bridge.monthly_budget(uuid, text, uuid) from public;
