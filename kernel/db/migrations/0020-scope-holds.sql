-- Pauses as holds. A company or agent is paused while any hold is on it; each hold names who
-- placed it (the board as 'operator', the kernel's own archive cascade as 'kernel', a plugin as
-- 'plugin:<key>') and why. A holder lifts only its own holds: a plugin's resume never lifts an
-- operator's pause or another plugin's, and the end of an archive lifts only the archive's
-- holds. The board's resume is the operator's decision over every hold, and lifts them all.
-- The status column stays what readers read; it is 'paused' exactly while a hold exists, and
-- pause_reason is the reason of the oldest hold.
create table scope_holds (
  company_id uuid not null references companies (id) on delete cascade,
  scope text not null check (scope in ('company', 'agent')),
  scope_id uuid not null,
  holder text not null check (holder in ('operator', 'kernel') or holder like 'plugin:%'),
  reason text not null check (length(reason) between 1 and 500),
  created_at timestamptz not null default clock_timestamp(),
  primary key (scope, scope_id, holder, reason)
);
create index scope_holds_company on scope_holds (company_id);

-- Every pause that exists today becomes a hold: archive pauses are the kernel's, a plugin's
-- budget stop is the costs plugin's, everything else the operator's.
insert into scope_holds (company_id, scope, scope_id, holder, reason, created_at)
select company_id, 'agent', id,
       case coalesce(pause_reason, 'manual') when 'company_archived' then 'kernel' when 'budget_hard_stop' then 'plugin:costs' else 'operator' end,
       coalesce(pause_reason, 'manual'), coalesce(paused_at, now())
  from agents where status = 'paused';
insert into scope_holds (company_id, scope, scope_id, holder, reason, created_at)
select id, 'company', id,
       case coalesce(pause_reason, 'manual') when 'budget_hard_stop' then 'plugin:costs' else 'operator' end,
       coalesce(pause_reason, 'manual'), coalesce(paused_at, now())
  from companies where status = 'paused';

-- Places (held = true) or lifts (held = false) one hold of one holder, and brings the scope's
-- status in step: the first hold pauses, the last one lifted resumes. Only a scope that can
-- work takes a hold (an agent that is terminated or pending approval, a company that is
-- archived, take none). Answers {found, change}: found is false for an agent that is not the
-- company's (an unknown id and another company's agent alike), change is {from, to} when the
-- status changed, else null. Nothing is raised, so a refusal never aborts the caller's
-- transaction. The caller writes the activity entry and the event.
create function keel_private.change_hold(company uuid, scope_kind text, target uuid, holder_name text, why text, held boolean)
  returns jsonb language plpgsql security definer set search_path = public, pg_temp as $$
declare
  current_status text;
  remaining text;
  resumed_status text := case when scope_kind = 'agent' then 'idle' else 'active' end;
begin
  if scope_kind = 'agent' then
    select status into current_status from agents where id = target and company_id = company for update;
  elsif scope_kind = 'company' then
    select status into current_status from companies where id = company and id = target for update;
  end if;
  if current_status is null then
    return jsonb_build_object('found', false);
  end if;

  if held then
    if current_status in ('terminated', 'pending_approval', 'archived') then
      return jsonb_build_object('found', true, 'change', null);
    end if;
    insert into scope_holds (company_id, scope, scope_id, holder, reason)
    values (company, scope_kind, target, holder_name, why) on conflict do nothing;
    if current_status = 'paused' then
      return jsonb_build_object('found', true, 'change', null);
    end if;
    if scope_kind = 'agent' then
      update agents set status = 'paused', pause_reason = why, paused_at = now(), updated_at = now() where id = target;
    else
      update companies set status = 'paused', pause_reason = why, paused_at = now(), updated_at = now() where id = target;
    end if;
    return jsonb_build_object('found', true, 'change', jsonb_build_object('from', current_status, 'to', 'paused'));
  end if;

  delete from scope_holds where scope = scope_kind and scope_id = target and holder = holder_name and reason = why;
  if not found or current_status <> 'paused' then
    return jsonb_build_object('found', true, 'change', null);
  end if;
  select reason into remaining from scope_holds where scope = scope_kind and scope_id = target order by created_at, reason limit 1;
  if remaining is not null then
    -- Still held by someone else: paused, for the oldest reason left.
    if scope_kind = 'agent' then
      update agents set pause_reason = remaining where id = target;
    else
      update companies set pause_reason = remaining where id = target;
    end if;
    return jsonb_build_object('found', true, 'change', null);
  end if;
  if scope_kind = 'agent' then
    update agents set status = resumed_status, pause_reason = null, paused_at = null, updated_at = now() where id = target;
  else
    update companies set status = resumed_status, pause_reason = null, paused_at = null, updated_at = now() where id = target;
  end if;
  return jsonb_build_object('found', true, 'change', jsonb_build_object('from', 'paused', 'to', resumed_status));
end $$;
revoke all on function keel_private.change_hold(uuid, text, uuid, text, text, boolean) from public;

-- A plugin's hold (agents.pause, companies.pause), in the plugin's own transaction: the hold,
-- the status, the activity entry and the status event commit or roll back with the plugin's
-- writes, so a hard stop is never lost between a commit and its announcement. Answers
-- {found, changed}.
create function keel_private.plugin_hold(claims jsonb, scope_kind text, target uuid, held boolean, why text)
  returns jsonb language plpgsql security definer set search_path = public, pg_temp as $$
declare
  company uuid := keel_private.company_of(claims);
  plugin text := claims ->> 'plugin';
  actor jsonb := jsonb_build_object('actorType', 'system', 'actorId', 'plugin:' || plugin);
  answer jsonb;
  change jsonb;
begin
  if why is null or length(why) = 0 or length(why) > 200 then
    raise exception 'reason must be 1-200 characters' using errcode = 'invalid_parameter_value';
  end if;
  answer := keel_private.change_hold(company, scope_kind, target, 'plugin:' || plugin, why, held);
  change := answer -> 'change';
  if not (answer ->> 'found')::boolean or change is null or change = 'null'::jsonb then
    return jsonb_build_object('found', (answer ->> 'found')::boolean, 'changed', false);
  end if;
  insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, seq, prev_hash, hash)
  values (company, 'system', 'plugin:' || plugin,
          scope_kind || case when held then '.paused' else '.resumed' end, scope_kind, target::text,
          case when scope_kind = 'agent' then target end, (claims ->> 'runId')::uuid,
          jsonb_build_object('from', change ->> 'from', 'to', change ->> 'to', 'reason', why, 'plugin', plugin,
                             'onBehalfOf', jsonb_build_object('actorType', claims ->> 'actorType', 'actorId', claims ->> 'actorId')),
          0, '', '');
  if scope_kind = 'agent' then
    perform keel_private.append_event('agent.status_changed', 'kernel', company, 'agent', target::text,
      jsonb_build_object('companyId', company, 'agentId', target, 'from', change ->> 'from', 'to', change ->> 'to',
                         'reason', case when held then why end, 'actor', actor));
  else
    perform keel_private.append_event('company.status_changed', 'kernel', company, 'company', company::text,
      jsonb_build_object('companyId', company, 'from', change ->> 'from', 'to', change ->> 'to',
                         'reason', case when held then why end, 'actor', actor));
  end if;
  return jsonb_build_object('found', true, 'changed', true);
end $$;
revoke all on function keel_private.plugin_hold(jsonb, text, uuid, boolean, text) from public;

create function keel_bridge.hold_agent(invocation text, signature text, agent_id uuid, held boolean, reason text)
  returns jsonb language sql security definer set search_path = public, pg_temp as $$
  select keel_private.plugin_hold(keel_private.verified_invocation(invocation, signature), 'agent', agent_id, held, reason)
$$;
revoke all on function keel_bridge.hold_agent(text, text, uuid, boolean, text) from public;

create function keel_bridge.hold_company(invocation text, signature text, held boolean, reason text)
  returns jsonb language sql security definer set search_path = public, pg_temp as $$
  select keel_private.plugin_hold(claims, 'company', keel_private.company_of(claims), held, reason)
    from keel_private.verified_invocation(invocation, signature) as v(claims)
$$;
revoke all on function keel_bridge.hold_company(text, text, boolean, text) from public;

-- The pause functions they replace (a resume there matched the last reason written to the row,
-- so it could lift another holder's pause). Plugin roles are granted the new ones when their
-- plugin next starts.
drop function keel_bridge.pause_agent(text, text, uuid, boolean, text);
drop function keel_bridge.pause_company(text, text, boolean, text);
drop function keel_private.set_scope_paused(jsonb, text, uuid, boolean, text);
