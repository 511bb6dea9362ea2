-- A plugin's activity entry names the entity it is about. When that is one of the kernel's own
-- entities, the entry lands in the signed invocation's company chain and would otherwise tell
-- the board that something happened to another company's agent (or let the plugin probe which
-- ids exist). Kernel entities must belong to the company the invocation serves, or to the
-- plugin itself; kernel-only entities may not be named at all. The plugin's own entity types
-- (anything else) are its business.

-- The entity types checked here, in the lower-case form compared (`Agent ` is `agent`). The
-- worker reads this list to check such entries before it buffers or writes them.
create function keel_bridge.activity_entity_kinds()
  returns text[] language sql immutable as $$
  select array['company', 'agent', 'run', 'secret', 'approval', 'asset', 'permission_grant', 'user',
               'plugin', 'plugin_job_run', 'plugin_job', 'plugin_tool', 'plugin_webhook',
               'board_api_key', 'cli_auth_challenge', 'instance_settings', 'resource_membership']
$$;

-- Why an entry of the invocation with these claims may not name this entity, or null when it
-- may. Another company's entity and an id that names nothing are refused in the same words.
create function keel_private.activity_entity_refusal(claims jsonb, entity_type text, entity_id text)
  returns text language plpgsql stable security definer set search_path = public, pg_temp as $$
declare
  kind text := lower(btrim(entity_type));
  company uuid := (claims ->> 'companyId')::uuid;
  plugin text := claims ->> 'plugin';
  ref uuid;
  found boolean;
begin
  if kind in ('board_api_key', 'cli_auth_challenge', 'instance_settings', 'resource_membership') then
    return format('%s entries are the kernel''s own; a plugin may not name them', kind);
  end if;
  if kind in ('plugin', 'plugin_job', 'plugin_tool', 'plugin_webhook') then
    if entity_id = plugin or (kind <> 'plugin' and starts_with(entity_id, plugin || '.')) then return null; end if;
    return format('%s %s is not %s''s own', kind, left(entity_id, 100), plugin);
  end if;
  if kind = 'plugin_job_run' then
    if entity_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
       and exists (select 1 from plugin_job_runs r where r.id = entity_id::uuid and r.plugin_key = plugin) then
      return null;
    end if;
    return format('no job run %s of %s', left(entity_id, 100), plugin);
  end if;
  if kind not in ('company', 'agent', 'run', 'secret', 'approval', 'asset', 'permission_grant', 'user') then
    return null;
  end if;
  if company is null then
    return format('%s entries belong to a company, and this call serves none', kind);
  end if;
  if kind = 'user' then
    found := entity_id = claims ->> 'actorId' or exists (select 1 from company_memberships m
      where m.company_id = company and m.principal_type = 'user' and m.principal_id = entity_id);
  elsif entity_id !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    found := false;
  else
    ref := entity_id::uuid;
    found := case kind
      when 'company' then ref = company
      when 'agent' then exists (select 1 from agents x where x.id = ref and x.company_id = company)
      when 'run' then exists (select 1 from runs x where x.id = ref and x.company_id = company)
      when 'secret' then exists (select 1 from secrets x where x.id = ref and x.company_id = company)
      when 'approval' then exists (select 1 from approvals x where x.id = ref and x.company_id = company)
      when 'asset' then exists (select 1 from assets x where x.id = ref and x.company_id = company)
      when 'permission_grant' then exists (select 1 from permission_grants x where x.id = ref and x.company_id = company)
    end;
  end if;
  if found then return null; end if;
  return format('no %s %s in the company this call serves', kind, left(entity_id, 100));
end $$;
revoke all on function keel_private.activity_entity_refusal(jsonb, text, text) from public;

-- Raises the refusal, for the functions that write.
create function keel_private.assert_activity_entity(claims jsonb, entity_type text, entity_id text)
  returns jsonb language plpgsql stable security definer set search_path = public, pg_temp as $$
declare
  refusal text := keel_private.activity_entity_refusal(claims, entity_type, entity_id);
begin
  if refusal is not null then
    raise exception '%', refusal using errcode = 'insufficient_privilege', hint = 'keel_activity_entity';
  end if;
  return claims;
end $$;
revoke all on function keel_private.assert_activity_entity(jsonb, text, text) from public;

-- The check alone, answered rather than raised: the worker asks before it writes or buffers an
-- entry, so a refused entry fails that one call of ctx.activity.record and not the plugin's
-- transaction (or a whole batch's commit).
create function keel_bridge.activity_entity_refusal(invocation text, signature text, entity_type text, entity_id text)
  returns text language sql stable security definer set search_path = public, pg_temp as $$
  select keel_private.activity_entity_refusal(keel_private.verified_invocation(invocation, signature), entity_type, entity_id)
$$;
revoke all on function keel_bridge.activity_entity_refusal(text, text, text, text) from public;

create or replace function keel_bridge.record_activity(invocation text, signature text, action text, entity_type text, entity_id text, details jsonb)
  returns void language plpgsql security definer set search_path = public, pg_temp as $$
declare
  claims jsonb := keel_private.assert_activity_entity(keel_private.verified_invocation(invocation, signature), entity_type, entity_id);
begin
  insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, seq, prev_hash, hash)
  values ((claims ->> 'companyId')::uuid, claims ->> 'actorType', claims ->> 'actorId', action, entity_type, entity_id,
          (claims ->> 'agentId')::uuid, (claims ->> 'runId')::uuid,
          coalesce(details, '{}'::jsonb) || jsonb_build_object('plugin', claims ->> 'plugin'), 0, '', '');
end $$;

create or replace function keel_bridge.record_activities(entries jsonb)
  returns void language sql security definer set search_path = public, pg_temp as $$
  insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, seq, prev_hash, hash)
  select (c ->> 'companyId')::uuid, c ->> 'actorType', c ->> 'actorId', x.e ->> 'action', x.e ->> 'entityType', x.e ->> 'entityId',
         (c ->> 'agentId')::uuid, (c ->> 'runId')::uuid,
         coalesce(nullif(x.e -> 'details', 'null'::jsonb), '{}'::jsonb) || jsonb_build_object('plugin', c ->> 'plugin'), 0, '', ''
    from jsonb_array_elements(entries) with ordinality as x(e, ord)
    cross join lateral keel_private.assert_activity_entity(keel_private.verified_invocation(x.e ->> 'invocation', x.e ->> 'signature'),
                                                          x.e ->> 'entityType', x.e ->> 'entityId') as v(c)
   order by x.ord
$$;
