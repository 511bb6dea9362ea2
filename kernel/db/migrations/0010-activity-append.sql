-- Appending to an activity chain looks the chain head up first and creates it only when it is
-- missing: the speculative insert that used to precede every append cost an index probe and a
-- conflict check per entry, and a batch appends many entries to one chain.
create or replace function keel_activity_append() returns trigger language plpgsql as $$
declare
  head activity_chain_heads%rowtype;
  key text := coalesce(new.company_id::text, 'instance');
begin
  -- The row lock serialises appends per chain, so seq and prev_hash never fork.
  select * into head from activity_chain_heads where chain_key = key for update;
  if not found then
    insert into activity_chain_heads (chain_key, last_seq, last_hash)
      values (key, 0, repeat('0', 64)) on conflict (chain_key) do nothing;
    select * into head from activity_chain_heads where chain_key = key for update;
  end if;
  new.seq := head.last_seq + 1;
  new.prev_hash := head.last_hash;
  new.created_at := clock_timestamp();
  new.hash := keel_activity_hash(new.prev_hash, new.seq, new.company_id, new.actor_type, new.actor_id, new.action,
    new.entity_type, new.entity_id, new.agent_id, new.run_id, new.details, new.created_at);
  update activity_chain_heads set last_seq = new.seq, last_hash = new.hash where chain_key = key;
  return new;
end $$;

-- One signature check for every bridge function: record_activity now uses
-- keel_private.verified_invocation (0009) instead of its own copy of the same checks.
create or replace function keel_bridge.record_activity(invocation text, signature text, action text, entity_type text, entity_id text, details jsonb)
  returns void language plpgsql security definer set search_path = public, pg_temp as $$
declare
  claims jsonb := keel_private.verified_invocation(invocation, signature);
begin
  insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, seq, prev_hash, hash)
  values ((claims ->> 'companyId')::uuid, claims ->> 'actorType', claims ->> 'actorId', action, entity_type, entity_id,
          (claims ->> 'agentId')::uuid, (claims ->> 'runId')::uuid,
          coalesce(details, '{}'::jsonb) || jsonb_build_object('plugin', claims ->> 'plugin'), 0, '', '');
end $$;

-- The activity entries of a plugin's group commit, in one statement: each entry carries the
-- invocation identity the kernel signed for its own call and is verified like a single entry;
-- identity comes from the signed claims only. Entries are appended in the order given (the
-- row trigger chains them).
create function keel_bridge.record_activities(entries jsonb)
  returns void language sql security definer set search_path = public, pg_temp as $$
  insert into activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, agent_id, run_id, details, seq, prev_hash, hash)
  select (c ->> 'companyId')::uuid, c ->> 'actorType', c ->> 'actorId', x.e ->> 'action', x.e ->> 'entityType', x.e ->> 'entityId',
         (c ->> 'agentId')::uuid, (c ->> 'runId')::uuid,
         coalesce(nullif(x.e -> 'details', 'null'::jsonb), '{}'::jsonb) || jsonb_build_object('plugin', c ->> 'plugin'), 0, '', ''
    from jsonb_array_elements(entries) with ordinality as x(e, ord)
    cross join lateral keel_private.verified_invocation(x.e ->> 'invocation', x.e ->> 'signature') as v(c)
   order by x.ord
$$;
revoke all on function keel_bridge.record_activities(jsonb) from public;
