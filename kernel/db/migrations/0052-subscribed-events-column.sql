-- The events each plugin subscribes to after commit, kept beside its manifest. Every event's
-- append looked for its subscribers by reading each enabled plugin's whole manifest (a large
-- jsonb, read out of TOAST and decompressed per plugin per event): about half of an append's
-- time. A stored generated column holds just the event names, and always follows the manifest.
alter table plugins add column subscribed_events jsonb not null
  generated always as (jsonb_path_query_array(manifest, '$.events[*] ? (@.mode == "after_commit").event')) stored;

-- As in migration 0042, with the subscribers found by the column.
create or replace function keel_private.append_event(event_name text, publisher text, company uuid, entity_type text, entity_id text, payload jsonb, invocation_id text, event_id uuid)
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
     and p.subscribed_events @> jsonb_build_array(event_name);
  get diagnostics fanned = row_count;
  if fanned > 0 then
    perform pg_notify('keel_events', '');
  end if;
  return event_row.id;
end $$;

-- As in migration 0033, with the subscriber's declaration read from the column.
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
     and p.subscribed_events @> jsonb_build_array(event_name);
  get diagnostics fanned = row_count;
  if fanned > 0 then
    perform pg_notify('keel_events', '');
  end if;
  return event_row.id;
end $$;
