-- One writer for the activity log. Every entry, whoever records it (the kernel's ActivityLog, a
-- plugin's ctx.activity.record through the bridge, a batch's entries at its commit, a plugin's
-- hold), is inserted by keel_private.append_activities; the row trigger keel_activity_append
-- gives each its place in the company's hash chain. Entries go in the order given.
create function keel_private.append_activities(entries jsonb)
  returns setof activity_log language sql security definer set search_path = public, pg_temp as $$
  insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, seq, prev_hash, hash)
  select (x.e ->> 'companyId')::uuid, x.e ->> 'actorType', x.e ->> 'actorId', x.e ->> 'action', x.e ->> 'entityType', x.e ->> 'entityId',
         (x.e ->> 'agentId')::uuid, (x.e ->> 'runId')::uuid, nullif(x.e -> 'details', 'null'::jsonb), 0, '', ''
    from jsonb_array_elements(entries) with ordinality as x(e, ord)
   order by x.ord
  returning *
$$;
revoke all on function keel_private.append_activities(jsonb) from public;

-- A plugin's entry: identity from the signed claims, the entity checked to be the company's.
create or replace function keel_bridge.record_activity(invocation text, signature text, action text, entity_type text, entity_id text, details jsonb)
  returns void language plpgsql security definer set search_path = public, pg_temp as $$
declare
  claims jsonb := keel_private.assert_activity_entity(keel_private.verified_invocation(invocation, signature), entity_type, entity_id);
begin
  perform keel_private.append_activities(jsonb_build_array(jsonb_build_object(
    'companyId', claims ->> 'companyId', 'actorType', claims ->> 'actorType', 'actorId', claims ->> 'actorId',
    'action', action, 'entityType', entity_type, 'entityId', entity_id, 'agentId', claims ->> 'agentId', 'runId', claims ->> 'runId',
    'details', coalesce(details, '{}'::jsonb) || jsonb_build_object('plugin', claims ->> 'plugin'))));
end $$;

-- A group commit's entries, each verified like a single entry, in one insert.
create or replace function keel_bridge.record_activities(entries jsonb)
  returns void language sql security definer set search_path = public, pg_temp as $$
  select count(*) from keel_private.append_activities((
    select coalesce(jsonb_agg(jsonb_build_object(
             'companyId', c ->> 'companyId', 'actorType', c ->> 'actorType', 'actorId', c ->> 'actorId',
             'action', x.e ->> 'action', 'entityType', x.e ->> 'entityType', 'entityId', x.e ->> 'entityId',
             'agentId', c ->> 'agentId', 'runId', c ->> 'runId',
             'details', coalesce(nullif(x.e -> 'details', 'null'::jsonb), '{}'::jsonb) || jsonb_build_object('plugin', c ->> 'plugin'))
           order by x.ord), '[]'::jsonb)
      from jsonb_array_elements(entries) with ordinality as x(e, ord)
      cross join lateral keel_private.assert_activity_entity(keel_private.verified_invocation(x.e ->> 'invocation', x.e ->> 'signature'),
                                                            x.e ->> 'entityType', x.e ->> 'entityId') as v(c)))
$$;

-- A plugin's hold (agents.pause, companies.pause): its entry through the same writer.
create or replace function keel_private.plugin_hold(claims jsonb, scope_kind text, target uuid, held boolean, why text)
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
  perform keel_private.append_activities(jsonb_build_array(jsonb_build_object(
    'companyId', company, 'actorType', 'system', 'actorId', 'plugin:' || plugin,
    'action', scope_kind || case when held then '.paused' else '.resumed' end, 'entityType', scope_kind, 'entityId', target::text,
    'agentId', case when scope_kind = 'agent' then target end, 'runId', claims ->> 'runId',
    'details', jsonb_build_object('from', change ->> 'from', 'to', change ->> 'to', 'reason', why, 'plugin', plugin,
                                  'onBehalfOf', jsonb_build_object('actorType', claims ->> 'actorType', 'actorId', claims ->> 'actorId')))));
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
