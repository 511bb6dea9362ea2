-- Durable events: a transactional outbox. An event is one row of keel_events.outbox, written in
-- the writer's own transaction (the kernel's, or a plugin invocation's through
-- keel_bridge.publish_event), together with one delivery row per subscribing plugin. Delivery
-- rows are leased by the kernel processes (FOR UPDATE SKIP LOCKED, with an expiry), so each
-- subscriber gets each event from exactly one process at a time, at least once, in order per
-- entity. Plugin roles get no privilege on keel_events.
create schema keel_events;
revoke all on schema keel_events from public;

create table keel_events.outbox (
  id uuid primary key default gen_random_uuid(),
  -- Commit order per entity: publishers of one entity are serialised (see append_event).
  seq bigint generated always as identity unique,
  name text not null,
  -- 'kernel' or the publishing plugin's key.
  publisher text not null,
  -- No foreign key: company.deleted outlives its company.
  company_id uuid,
  entity_type text not null,
  entity_id text not null,
  payload jsonb not null,
  created_at timestamptz not null default now()
);
create index outbox_created on keel_events.outbox (created_at);

create table keel_events.deliveries (
  subscriber text not null references plugins (key) on delete cascade,
  event_seq bigint not null,
  event_id uuid not null references keel_events.outbox (id) on delete cascade,
  entity_type text not null,
  entity_id text not null,
  -- pending: waiting (from available_at); leased: a process is delivering it until lease_until;
  -- dead: failed max attempts, waits for an operator (and holds back later events of its entity);
  -- delivered / discarded: done.
  state text not null default 'pending' check (state in ('pending', 'leased', 'delivered', 'dead', 'discarded')),
  attempts integer not null default 0,
  available_at timestamptz not null default now(),
  lease_until timestamptz,
  leased_by text,
  last_error text,
  finished_at timestamptz,
  primary key (subscriber, event_seq)
);
-- The per-entity head check and the claim scan only look at unfinished rows.
create index deliveries_open_entity on keel_events.deliveries (subscriber, entity_type, entity_id, event_seq)
  where state in ('pending', 'leased', 'dead');
create index deliveries_due on keel_events.deliveries (available_at)
  where state in ('pending', 'leased');
create index deliveries_finished on keel_events.deliveries (finished_at) where state in ('delivered', 'discarded');

-- Appends one event and its deliveries in the caller's transaction, and wakes the delivering
-- processes (NOTIFY is sent at commit, and not at all on rollback). Publishers of one entity
-- take a transaction-level advisory lock on it first, so that the order of `seq` within an
-- entity is the order in which its writers commit. Subscribers are the enabled plugins granted
-- events.subscribe that declare the event after_commit.
create function keel_private.append_event(event_name text, publisher text, company uuid, entity_type text, entity_id text, payload jsonb)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  event_row keel_events.outbox;
  fanned integer;
begin
  perform pg_advisory_xact_lock(727014, hashtext(entity_type || ':' || entity_id));
  insert into keel_events.outbox (name, publisher, company_id, entity_type, entity_id, payload)
  values (event_name, publisher, company, entity_type, entity_id, payload)
  returning * into event_row;
  insert into keel_events.deliveries (subscriber, event_seq, event_id, entity_type, entity_id)
  select p.key, event_row.seq, event_row.id, entity_type, entity_id
    from plugins p
   where p.status = 'enabled' and 'events.subscribe' = any (p.granted_capabilities)
     and coalesce(p.manifest -> 'events', '[]'::jsonb) @> jsonb_build_array(jsonb_build_object('event', event_name, 'mode', 'after_commit'));
  get diagnostics fanned = row_count;
  if fanned > 0 then
    perform pg_notify('keel_events', '');
  end if;
  return event_row.id;
end $$;
revoke all on function keel_private.append_event(text, text, uuid, text, text, jsonb) from public;

-- events.publish: a plugin's own event, in the invocation's own transaction (it commits or rolls
-- back with the plugin's writes). The database checks what the host checked before: the
-- invocation is the kernel's, it serves a company (events are company-scoped), the name is
-- under the plugin's own key and declared in its manifest. Kernel events (company.*, agent.*)
-- and other plugins' events can never pass: their names are not under the caller's key.
create function keel_bridge.publish_event(invocation text, signature text, event_name text, entity_type text, entity_id text, payload jsonb)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  claims jsonb := keel_private.verified_invocation(invocation, signature);
  company uuid := keel_private.company_of(claims);
  plugin text := claims ->> 'plugin';
begin
  if left(event_name, length(plugin) + 1) <> plugin || '.' then
    raise exception 'plugin % may publish only events named %.*', plugin, plugin using errcode = 'insufficient_privilege';
  end if;
  if not exists (select 1 from plugins p
                  where p.key = plugin and p.status = 'enabled' and 'events.publish' = any (p.granted_capabilities)
                    and coalesce(p.manifest -> 'publishedEvents', '[]'::jsonb) @> jsonb_build_array(jsonb_build_object('name', event_name))) then
    raise exception 'event % is not declared under publishedEvents of plugin %', event_name, plugin using errcode = 'insufficient_privilege';
  end if;
  return keel_private.append_event(event_name, plugin, company, entity_type, entity_id, payload);
end $$;
revoke all on function keel_bridge.publish_event(text, text, text, text, text, jsonb) from public;
