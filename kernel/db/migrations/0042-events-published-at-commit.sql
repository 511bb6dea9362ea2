-- Events a plugin call publishes are written just before its COMMIT (issue 30, point 3).
--
-- An event's append takes the transaction-level advisory lock of its (publisher, entity), which
-- makes the outbox's `seq` order commit order, and holds it until the commit. Written when the
-- plugin called ctx.events.publish, the lock was held for the rest of the call as well: every
-- comment of an issue waited for the previous comment's whole call, not only for its commit.
-- The worker now buffers such an event and writes it in the same pipeline as the call's
-- activity entries and COMMIT, so the lock is held for the commit alone. The plugin is answered
-- the event's id at once, so the id is chosen by the worker and passed here; the 6-argument
-- functions keep their signatures and draw one as before. Everything else (the signed
-- identity, the declaration, the entity check, the per-call bounds, one delivery row per
-- subscriber, NOTIFY at commit) is as in migration 0033.

create function keel_private.append_event(event_name text, publisher text, company uuid, entity_type text, entity_id text, payload jsonb, invocation_id text, event_id uuid)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  event_row keel_events.outbox;
  fanned integer;
begin
  perform pg_advisory_xact_lock(727014, hashtext(publisher || ':' || entity_type || ':' || entity_id));
  insert into keel_events.outbox (id, name, publisher, company_id, entity_type, entity_id, payload, invocation_id)
  values (event_id, event_name, publisher, company, entity_type, entity_id, payload, invocation_id)
  returning * into event_row;
  insert into keel_events.deliveries (subscriber, event_seq, event_id, entity_type, entity_id, publisher)
  select p.key, event_row.seq, event_row.id, entity_type, entity_id, publisher
    from plugins p
   where p.status = 'enabled' and 'events.subscribe' = any (p.granted_capabilities)
     and coalesce(p.manifest -> 'events', '[]'::jsonb) @> jsonb_build_array(jsonb_build_object('event', event_name, 'mode', 'after_commit'));
  get diagnostics fanned = row_count;
  if fanned > 0 then
    perform pg_notify('keel_events', '');
  end if;
  return event_row.id;
end $$;
revoke all on function keel_private.append_event(text, text, uuid, text, text, jsonb, text, uuid) from public;

create or replace function keel_private.append_event(event_name text, publisher text, company uuid, entity_type text, entity_id text, payload jsonb, invocation_id text)
  returns uuid language sql security definer set search_path = public, pg_temp as $$
  select keel_private.append_event(event_name, publisher, company, entity_type, entity_id, payload, invocation_id, gen_random_uuid())
$$;

create function keel_bridge.publish_event(invocation text, signature text, event_name text, entity_type text, entity_id text, payload jsonb, event_id uuid)
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

create or replace function keel_bridge.publish_event(invocation text, signature text, event_name text, entity_type text, entity_id text, payload jsonb)
  returns uuid language sql security definer set search_path = public, pg_temp as $$
  select keel_bridge.publish_event(invocation, signature, event_name, entity_type, entity_id, payload, gen_random_uuid())
$$;
