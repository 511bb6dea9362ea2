-- Events published by plugins, third pass (issue 25, point 5).
--
-- 1. An event's entity is checked against the company it is published in, exactly as an
--    activity entry's is (keel_private.activity_entity_refusal, migration 0012, plus the
--    kernel's executions, which only the outbox names): a plugin
--    serving company A could otherwise publish an event about company B's agent, which B's
--    subscribers would then act on in A's name.
-- 2. One call publishes at most MAX_EVENTS events and MAX_BYTES bytes of payload (the payloads'
--    JSON text as stored). The bound is kept here, where every publish passes, by counting the
--    call's own rows of the outbox (keel_events.outbox.invocation_id, the signed invocation id).
--    A refusal raises, so the call's transaction (with its earlier events) rolls back.
-- 3. Delivery order is kept per (subscriber, publisher, entity), no longer per (subscriber,
--    entity): a dead letter of one publisher holds back only that publisher's later events of
--    the entity at that subscriber, so a plugin's refused events can no longer hold back the
--    kernel's own events (or another plugin's) for the same entity. The advisory lock that
--    makes `seq` order commit order is taken per (publisher, entity) accordingly: order across
--    publishers is no longer promised, and a plugin's publish (entity lock, then its activity
--    entry's chain lock at the end of its call) no longer waits on, or deadlocks with, the
--    kernel's change of the same entity (activity chain lock, then entity lock).

alter table keel_events.deliveries add column publisher text;
update keel_events.deliveries d set publisher = o.publisher from keel_events.outbox o where o.seq = d.event_seq;
alter table keel_events.deliveries alter column publisher set not null;
drop index keel_events.deliveries_open_entity;
-- The per-(publisher, entity) head check of the claim only looks at unfinished rows.
create index deliveries_open_entity on keel_events.deliveries (subscriber, publisher, entity_type, entity_id, event_seq)
  where state in ('pending', 'leased', 'dead');

-- The invocation that published a plugin's event (null for kernel events): what the per-call
-- bounds count, and where an operator sees which call an event came from.
alter table keel_events.outbox add column invocation_id text;
create index outbox_invocation on keel_events.outbox (invocation_id) where invocation_id is not null;

-- As in 0014, with the publisher on each delivery row and the publishing invocation on the
-- event; writers are serialised per (publisher, entity).
create function keel_private.append_event(event_name text, publisher text, company uuid, entity_type text, entity_id text, payload jsonb, invocation_id text)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  event_row keel_events.outbox;
  fanned integer;
begin
  perform pg_advisory_xact_lock(727014, hashtext(publisher || ':' || entity_type || ':' || entity_id));
  insert into keel_events.outbox (name, publisher, company_id, entity_type, entity_id, payload, invocation_id)
  values (event_name, publisher, company, entity_type, entity_id, payload, invocation_id)
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
revoke all on function keel_private.append_event(text, text, uuid, text, text, jsonb, text) from public;

-- The kernel's callers (events.emit, the pause bridges of 0020) keep their signature.
create or replace function keel_private.append_event(event_name text, publisher text, company uuid, entity_type text, entity_id text, payload jsonb)
  returns uuid language sql security definer set search_path = public, pg_temp as $$
  select keel_private.append_event(event_name, publisher, company, entity_type, entity_id, payload, null::text)
$$;

create or replace function keel_private.append_event_to(event_name text, company uuid, entity_type text, entity_id text, payload jsonb, subscriber text)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  event_row keel_events.outbox;
  fanned integer;
begin
  perform pg_advisory_xact_lock(727014, hashtext('kernel:' || entity_type || ':' || entity_id));
  insert into keel_events.outbox (name, publisher, company_id, entity_type, entity_id, payload)
  values (event_name, 'kernel', company, entity_type, entity_id, payload)
  returning * into event_row;
  insert into keel_events.deliveries (subscriber, event_seq, event_id, entity_type, entity_id, publisher)
  select p.key, event_row.seq, event_row.id, entity_type, entity_id, 'kernel'
    from plugins p
   where p.key = subscriber and p.status = 'enabled' and 'events.subscribe' = any (p.granted_capabilities)
     and coalesce(p.manifest -> 'events', '[]'::jsonb) @> jsonb_build_array(jsonb_build_object('event', event_name, 'mode', 'after_commit'));
  get diagnostics fanned = row_count;
  if fanned > 0 then
    perform pg_notify('keel_events', '');
  end if;
  return event_row.id;
end $$;

-- events.publish, as in 0014, plus the entity check and the per-call bounds. Their refusals
-- carry a hint the worker turns into the plugin-facing code: keel_activity_entity
-- (event_entity_denied), keel_event_count (too_many_events), keel_event_bytes
-- (event_bytes_exceeded).
create or replace function keel_bridge.publish_event(invocation text, signature text, event_name text, entity_type text, entity_id text, payload jsonb)
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
  -- Executions are kernel entities of the outbox (execution.output, execution.finished) that the
  -- activity check does not list: checked here the same way, in the same words.
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
  return keel_private.append_event(event_name, plugin, company, entity_type, entity_id, payload, call_id);
end $$;
