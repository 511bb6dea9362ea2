-- Month-to-date spend belongs to a calendar month (UTC): a row whose stored month is not the
-- current one reads as zero, so spend resets on the first of the month with no job to run.
alter table companies add column spent_month date;
alter table agents add column spent_month date;

-- The claims of a kernel-signed plugin invocation, after checking the signature, the calling
-- role and the expiry: the one check every bridge function makes (keel_bridge.record_activity
-- is redefined on it in 0010).
create function keel_private.verified_invocation(invocation text, signature text)
  returns jsonb language plpgsql stable security definer set search_path = public, pg_temp as $$
declare
  k bytea;
  claims jsonb;
begin
  select b.key into k from keel_private.bridge_key b;
  if encode(sha256(k || sha256(k || convert_to(invocation, 'UTF8'))), 'hex') <> signature then
    raise exception 'invalid invocation signature' using errcode = 'insufficient_privilege';
  end if;
  claims := invocation::jsonb;
  if claims ->> 'role' <> session_user then
    raise exception 'invocation signed for another plugin' using errcode = 'insufficient_privilege';
  end if;
  if (claims ->> 'exp')::bigint < extract(epoch from now())::bigint then
    raise exception 'invocation expired' using errcode = 'insufficient_privilege';
  end if;
  return claims;
end $$;
revoke all on function keel_private.verified_invocation(text, text) from public;

-- The company a signed invocation serves; kernel rows are changed only for calls that serve one.
create function keel_private.company_of(claims jsonb)
  returns uuid language plpgsql immutable as $$
begin
  if claims ->> 'companyId' is null then
    raise exception 'invocation has no company' using errcode = 'insufficient_privilege';
  end if;
  return (claims ->> 'companyId')::uuid;
end $$;
revoke all on function keel_private.company_of(jsonb) from public;

-- budgets.write: month-to-date spend of the invocation's company and of its agents, for the
-- given month. A report for an older month than the one stored is ignored (a late report must
-- not roll the month back); agents of other companies are never touched.
create function keel_bridge.report_monthly_spend(invocation text, signature text, month date, company_cents bigint, agent_cents jsonb)
  returns void language plpgsql security definer set search_path = public, pg_temp as $$
declare
  company uuid := keel_private.company_of(keel_private.verified_invocation(invocation, signature));
begin
  if month <> date_trunc('month', month) then
    raise exception 'month must be the first day of a month' using errcode = 'invalid_parameter_value';
  end if;
  if company_cents is not null then
    update companies set spent_monthly_cents = company_cents, spent_month = month
     where id = company and (spent_month is null or spent_month <= month)
       and (spent_month is distinct from month or spent_monthly_cents <> company_cents);
  end if;
  update agents a set spent_monthly_cents = x.cents, spent_month = month
    from (select distinct on (id) id, cents from jsonb_to_recordset(coalesce(agent_cents, '[]')) as r(id uuid, cents bigint) order by id) x
   where a.id = x.id and a.company_id = company and (a.spent_month is null or a.spent_month <= month);
end $$;
revoke all on function keel_bridge.report_monthly_spend(text, text, date, bigint, jsonb) from public;

-- budgets.write: the monthly budget of the invocation's company (scope 'company') or of one of
-- its agents (scope 'agent'). Returns whether a row was found.
create function keel_bridge.set_monthly_budget(invocation text, signature text, scope text, scope_id uuid, cents bigint)
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

-- Pauses (or resumes) a company or one of its agents in the caller's own transaction, so that a
-- hard stop commits or rolls back with the spend that caused it. A resume undoes only a pause
-- made for the same reason: an operator's own pause is never lifted by a plugin. The change is
-- written to the activity log as the plugin (actor type system). Returns the status the scope
-- had before, or null when nothing changed.
create function keel_private.set_scope_paused(claims jsonb, scope text, scope_id uuid, paused boolean, reason text)
  returns text language plpgsql security definer set search_path = public, pg_temp as $$
declare
  company uuid := keel_private.company_of(claims);
  previous text;
begin
  if reason is null or length(reason) = 0 or length(reason) > 200 then
    raise exception 'reason must be 1-200 characters' using errcode = 'invalid_parameter_value';
  end if;
  if scope = 'company' then
    if paused then
      update companies c set status = 'paused', pause_reason = reason, paused_at = now(), updated_at = now()
        from (select status from companies where id = company for update) old
       where c.id = company and c.id = coalesce(scope_id, company) and c.status = 'active' returning old.status into previous;
    else
      update companies c set status = 'active', pause_reason = null, paused_at = null, updated_at = now()
        from (select status from companies where id = company for update) old
       where c.id = company and c.id = coalesce(scope_id, company) and c.status = 'paused' and c.pause_reason = reason returning old.status into previous;
    end if;
  elsif scope = 'agent' then
    if paused then
      update agents a set status = 'paused', pause_reason = reason, paused_at = now(), updated_at = now()
        from (select status from agents where id = scope_id and company_id = company for update) old
       where a.id = scope_id and a.company_id = company and a.status in ('active', 'idle', 'running', 'error') returning old.status into previous;
    else
      update agents a set status = 'idle', pause_reason = null, paused_at = null, updated_at = now()
        from (select status from agents where id = scope_id and company_id = company for update) old
       where a.id = scope_id and a.company_id = company and a.status = 'paused' and a.pause_reason = reason returning old.status into previous;
    end if;
  else
    raise exception 'unknown scope %', scope using errcode = 'invalid_parameter_value';
  end if;
  if previous is null then
    return null;
  end if;
  insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, seq, prev_hash, hash)
  values (company, 'system', 'plugin:' || (claims ->> 'plugin'),
          scope || case when paused then '.paused' else '.resumed' end, scope, coalesce(scope_id, company)::text,
          case when scope = 'agent' then scope_id end, (claims ->> 'runId')::uuid,
          jsonb_build_object('from', previous, 'to', case when paused then 'paused' when scope = 'agent' then 'idle' else 'active' end,
                             'reason', reason, 'plugin', claims ->> 'plugin',
                             'onBehalfOf', jsonb_build_object('actorType', claims ->> 'actorType', 'actorId', claims ->> 'actorId')),
          0, '', '');
  return previous;
end $$;
revoke all on function keel_private.set_scope_paused(jsonb, text, uuid, boolean, text) from public;

-- agents.pause / companies.pause, in the caller's transaction.
create function keel_bridge.pause_agent(invocation text, signature text, agent_id uuid, paused boolean, reason text)
  returns text language sql security definer set search_path = public, pg_temp as $$
  select keel_private.set_scope_paused(keel_private.verified_invocation(invocation, signature), 'agent', agent_id, paused, reason)
$$;
revoke all on function keel_bridge.pause_agent(text, text, uuid, boolean, text) from public;

create function keel_bridge.pause_company(invocation text, signature text, paused boolean, reason text)
  returns text language sql security definer set search_path = public, pg_temp as $$
  select keel_private.set_scope_paused(keel_private.verified_invocation(invocation, signature), 'company', null, paused, reason)
$$;
revoke all on function keel_bridge.pause_company(text, text, boolean, text) from public;
