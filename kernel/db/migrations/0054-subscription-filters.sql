-- A subscription may filter its deliveries (`where` in the manifest's events entry): an event is
-- delivered to the subscriber only when each condition holds of its payload's top-level member
-- of that name. The runtime hears every issue comment to wake the agents it names, and most name
-- none (an agent's note on its own issue): each was a call into the plugin that did nothing.
--
-- A stored generated column keeps just the after_commit entries that filter (most plugins: an
-- empty array), so an append reads no manifest, as with subscribed_events (migration 0052).
alter table plugins add column subscription_filters jsonb not null
  generated always as (jsonb_path_query_array(manifest, '$.events[*] ? (@.mode == "after_commit" && exists(@.where))')) stored;

-- Whether a payload meets a filter: `in` (the member equals one of the scalars) and `nonEmpty`
-- (a non-empty array, object or string). A missing member meets neither; anything else the
-- manifest schema refuses, and it is refused here too.
create or replace function keel_private.delivery_filter_holds(payload jsonb, conditions jsonb)
  returns boolean language sql immutable parallel safe set search_path = pg_catalog, pg_temp as $$
  select coalesce(bool_and(
    case
      when c.value ? 'in' then exists (select 1 from jsonb_array_elements(c.value -> 'in') v where v = payload -> c.key)
      when c.value ? 'nonEmpty' then case jsonb_typeof(payload -> c.key)
        when 'array' then jsonb_array_length(payload -> c.key) > 0
        when 'object' then payload -> c.key <> '{}'::jsonb
        when 'string' then payload -> c.key <> '""'::jsonb
        else false end
      else false
    end), true)
  from jsonb_each(conditions) c
$$;
revoke all on function keel_private.delivery_filter_holds(jsonb, jsonb) from public;

-- Whether a subscriber takes an event: every after_commit entry of it for the event that filters holds.
create or replace function keel_private.subscriber_takes(filters jsonb, event_name text, payload jsonb)
  returns boolean language sql immutable parallel safe set search_path = pg_catalog, pg_temp as $$
  select filters = '[]'::jsonb or not exists (
    select 1 from jsonb_array_elements(filters) f
     where f ->> 'event' = event_name and not keel_private.delivery_filter_holds(payload, f -> 'where'))
$$;
revoke all on function keel_private.subscriber_takes(jsonb, text, jsonb) from public;

-- Delivers an appended event to its subscribers (or to the one named by sole_subscriber): the
-- enabled plugins granted events.subscribe that subscribe to it after commit and whose filters
-- hold. One fan-out for both append functions below, so they cannot drift apart.
create or replace function keel_private.fan_out_event(event_row keel_events.outbox, sole_subscriber text)
  returns void language plpgsql set search_path = public, pg_temp as $$
declare
  fanned integer;
begin
  insert into keel_events.deliveries (subscriber, event_seq, event_id, entity_type, entity_id, publisher)
  select p.key, event_row.seq, event_row.id, event_row.entity_type, event_row.entity_id, event_row.publisher
    from plugins p
   where (sole_subscriber is null or p.key = sole_subscriber)
     and p.status = 'enabled' and 'events.subscribe' = any (p.granted_capabilities)
     and p.subscribed_events @> jsonb_build_array(event_row.name)
     and keel_private.subscriber_takes(p.subscription_filters, event_row.name, event_row.payload);
  get diagnostics fanned = row_count;
  if fanned > 0 then
    perform pg_notify('keel_events', '');
  end if;
end $$;
revoke all on function keel_private.fan_out_event(keel_events.outbox, text) from public;

-- As in migration 0052, with each subscriber's filter applied.
create or replace function keel_private.append_event(event_name text, publisher text, company uuid, entity_type text, entity_id text, payload jsonb, invocation_id text, event_id uuid)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  event_row keel_events.outbox;
begin
  perform pg_advisory_xact_lock(727014, hashtext(publisher || ':' || entity_type || ':' || entity_id));
  insert into keel_events.outbox (id, name, publisher, company_id, entity_type, entity_id, payload, invocation_id)
  values (event_id, event_name, publisher, company, entity_type, entity_id, payload, invocation_id)
  returning * into event_row;
  perform keel_private.fan_out_event(event_row, null);
  return event_row.id;
end $$;

create or replace function keel_private.append_event_to(event_name text, company uuid, entity_type text, entity_id text, payload jsonb, subscriber text)
  returns uuid language plpgsql security definer set search_path = public, pg_temp as $$
declare
  event_row keel_events.outbox;
begin
  perform pg_advisory_xact_lock(727014, hashtext('kernel:' || entity_type || ':' || entity_id));
  insert into keel_events.outbox (name, publisher, company_id, entity_type, entity_id, payload)
  values (event_name, 'kernel', company, entity_type, entity_id, payload)
  returning * into event_row;
  perform keel_private.fan_out_event(event_row, subscriber);
  return event_row.id;
end $$;
