-- The keel_bridge function(s) of capability events.publish, the one current definition. Installed by the
-- migration runner under its lock (kernel/db/bridge-functions.ts) whenever this text changes;
-- every function stays SECURITY DEFINER with its search_path pinned and no EXECUTE for PUBLIC
-- (the installer refuses anything else). A plugin's runtime role may execute it only with the
-- capability granted (bridgeFunctions of kernel.ts, granted by plugin-databases.ts).

-- events.publish: an event of the calling plugin, appended to the outbox in the call's own
-- transaction (the worker writes a call's events just before its COMMIT, with the id it chose).
create or replace function keel_bridge.publish_event(invocation text, signature text, event_name text, entity_type text, entity_id text, payload jsonb, event_id uuid)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  -- The per-call bounds (docs/plugins/events.md); a call that needs more publishes a summary event.
  max_events constant integer := 1000;
  max_bytes constant integer := 8388608;
  claims jsonb := keel_private.verified_invocation(invocation, signature);
  company uuid := keel_private.company_of(claims);
  plugin text := claims ->> 'plugin';
  call_id text := claims ->> 'invocationId';
  bytes integer := octet_length(payload::text);
  earlier_events integer;
  earlier_bytes bigint;
begin
  if left(event_name, length(plugin) + 1) <> plugin || '.' then
    raise exception 'plugin % may publish only events named %.*', plugin, plugin using errcode = 'insufficient_privilege';
  end if;
  if not exists (select 1 from plugins p
                  where p.key = plugin and p.status = 'enabled' and 'events.publish' = any (p.granted_capabilities)
                    and coalesce(p.manifest -> 'publishedEvents', '[]'::jsonb) @> jsonb_build_array(jsonb_build_object('name', event_name))) then
    raise exception 'event % is not declared under publishedEvents of plugin %', event_name, plugin using errcode = 'insufficient_privilege';
  end if;
  perform keel_private.assert_activity_entity(claims, entity_type, entity_id);
  if lower(btrim(entity_type)) = 'execution'
     and not (entity_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
              and exists (select 1 from executions x where x.id = entity_id::uuid and x.company_id = company)) then
    raise exception 'no execution % in the company this call serves', left(entity_id, 100)
      using errcode = 'insufficient_privilege', hint = 'keel_activity_entity';
  end if;
  if call_id is null then
    raise exception 'invocation has no id' using errcode = 'insufficient_privilege';
  end if;
  select count(*)::integer, coalesce(sum(octet_length(o.payload::text)), 0) into earlier_events, earlier_bytes
    from keel_events.outbox o where o.invocation_id = call_id;
  if earlier_events >= max_events then
    raise exception 'one call may publish at most % events; publish fewer (a summary event, or the rest from an enqueued job)', max_events
      using errcode = 'program_limit_exceeded', hint = 'keel_event_count';
  end if;
  if earlier_bytes + bytes > max_bytes then
    raise exception 'one call may publish at most % bytes of event payloads; this event (% bytes) would make %', max_bytes, bytes, earlier_bytes + bytes
      using errcode = 'program_limit_exceeded', hint = 'keel_event_bytes';
  end if;
  return keel_private.append_event(event_name, plugin, company, entity_type, entity_id, payload, call_id, event_id);
end $$;
revoke all on function keel_bridge.publish_event(text, text, text, text, text, jsonb, uuid) from public;

-- The same without an id chosen by the worker.
create or replace function keel_bridge.publish_event(invocation text, signature text, event_name text, entity_type text, entity_id text, payload jsonb)
  returns uuid language sql security definer set search_path = public, pg_temp as $$
  select keel_bridge.publish_event(invocation, signature, event_name, entity_type, entity_id, payload, gen_random_uuid())
$$;
revoke all on function keel_bridge.publish_event(text, text, text, text, text, jsonb) from public;
